package keepalive

import (
	"fmt"
	"time"
)

// LSTHConfig configures the Long-Short-Term Histogram policy.
type LSTHConfig struct {
	HistogramConfig
	// Long is the long-term window (INFless §5.2: 24 hours, the diurnal period); > Short.
	Long time.Duration
	// Short is the short-term window (INFless §5.2: 1 hour); > 0.
	Short time.Duration
	// Gamma weighs the long-term windows against the short-term ones (INFless: γ = 0.5); in [0, 1].
	Gamma float64
}

// DefaultLSTHConfig returns INFless's settings: 24 h and 1 h histograms, γ = 0.5, and HHP's
// histogram settings (5th/99th percentiles, 10 % margin, 1-minute bins over 4 hours). A range of
// 24 h was tried: with ~100 idle times a day the 99th percentile is the day's longest gap, which
// kept bursty functions loaded for hours (4× HHP's idle time on fn4 for one cold start fewer).
func DefaultLSTHConfig() LSTHConfig {
	return LSTHConfig{HistogramConfig: DefaultHistogramConfig(), Long: 24 * time.Hour, Short: time.Hour, Gamma: 0.5}
}

// Validate reports the first field of c that is out of range.
func (c LSTHConfig) Validate() error {
	if err := c.HistogramConfig.Validate(); err != nil {
		return err
	}
	switch {
	case c.Short <= 0:
		return fmt.Errorf("keepalive.short: must be > 0, got %v", c.Short)
	case c.Long <= c.Short:
		return fmt.Errorf("keepalive.long: must be > short %v, got %v", c.Short, c.Long)
	case !(c.Gamma >= 0 && c.Gamma <= 1):
		return fmt.Errorf("keepalive.gamma: must be in [0, 1], got %v", c.Gamma)
	}
	return nil
}

// LSTH is INFless's Long-Short-Term Histogram policy (§3.5): idle times of the last 24 hours
// and of the last hour feed two histograms; each gives a head (pre-warm) and tail (keep-alive)
// as in HHP, and the windows are their weighted sums
//
//	pre-warm   = γ·L_prewarm   + (1 − γ)·S_prewarm
//	keep-alive = γ·L_keepalive + (1 − γ)·S_keepalive.
//
// INFless does not say what happens when a histogram has too few samples. LSTH applies HHP's
// sample floor to both: while the long histogram has fewer than MinSamples idle times the fixed
// keep-alive applies, and while the short one has fewer the long one decides alone (a quiet
// last hour carries no short-term signal; on the Azure traces trusting one or two recent idle
// times tripled the cold starts of the sporadic functions fn1, fn2 and fn6). It applies no CV
// test: the short histogram is meant to follow bursts, which a flatness test would discard.
type LSTH struct {
	cfg         LSTHConfig
	long, short *histogram
	last        time.Time
	seen        bool
}

var _ Policy = (*LSTH)(nil)

// NewLSTH returns an LSTH policy with no history.
func NewLSTH(cfg LSTHConfig) (*LSTH, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &LSTH{cfg: cfg,
		long:  newHistogram(cfg.BinWidth, cfg.Range, cfg.Long),
		short: newHistogram(cfg.BinWidth, cfg.Range, cfg.Short)}, nil
}

// Observe records an invocation busy from start to end; the time since the previous
// invocation's end is an idle time.
func (p *LSTH) Observe(start, end time.Time) {
	if p.seen {
		idle := start.Sub(p.last)
		p.long.add(start, idle)
		p.short.add(start, idle)
	}
	if end.Before(start) {
		end = start
	}
	p.last, p.seen = end, true
}

// Windows returns the windows that apply after the last invocation.
func (p *LSTH) Windows(now time.Time) Windows {
	p.long.evict(now)
	p.short.evict(now)
	if n := p.long.inBounds(); n < p.cfg.MinSamples {
		return Windows{KeepAlive: p.cfg.Fallback,
			Reason: fmt.Sprintf("fixed %v: %d idle times in %v < %d", p.cfg.Fallback, n, p.cfg.Long, p.cfg.MinSamples)}
	}
	lp, lk, _ := windowsOf(p.long, p.cfg.HistogramConfig)
	sp, sk, ok := windowsOf(p.short, p.cfg.HistogramConfig)
	if !ok || p.short.inBounds() < p.cfg.MinSamples {
		return Windows{PreWarm: lp, KeepAlive: lk, Reason: fmt.Sprintf("long-term histogram only: %d idle times in the short window", p.short.inBounds())}
	}
	g := p.cfg.Gamma
	mix := func(l, s time.Duration) time.Duration { return time.Duration(g*float64(l) + (1-g)*float64(s)) }
	return Windows{PreWarm: mix(lp, sp), KeepAlive: mix(lk, sk),
		Reason: fmt.Sprintf("γ=%.2g: long (%v, %v), short (%v, %v)", g, lp, lk, sp, sk)}
}
