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
// hybrid-histogram settings (DefaultHistogramConfig: 1-minute bins over 4 hours, 5th/99th
// percentiles, 10 % margin, CV and out-of-bounds tests). The windows are durations of history;
// the bins' range stays HHP's 4 hours (a 24 h range makes the 99th percentile the day's longest
// gap, which kept bursty functions loaded for hours).
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
// "Like HHP" (§3.5), each histogram's head and tail come from Shahrad et al.'s hybrid decision
// (hybridWindows), including its uncertain (standard keep-alive) and out-of-bounds (forecast)
// cases. INFless sets no sample floor; the only choice made here is that a short histogram with
// no idle time at all leaves the decision to the long one (see Windows).
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

// Windows returns the windows that apply after the last invocation: each histogram decides as
// HHP does (hybridWindows: percentiles, or the standard keep-alive when uncertain, or a forecast
// when out of bounds) and the two decisions are mixed with weight γ. A short histogram with no
// idle time at all (the last hour was one busy stretch, or the function has been silent for an
// hour) carries no short-term signal; the long one then decides alone.
func (p *LSTH) Windows(now time.Time) Windows {
	p.long.evict(now)
	p.short.evict(now)
	lw, _ := hybridWindows(p.long, p.cfg.HistogramConfig)
	if p.short.total == 0 {
		lw.Reason = "long-term only (no idle time in the short window): " + lw.Reason
		return lw
	}
	sw, _ := hybridWindows(p.short, p.cfg.HistogramConfig)
	g := p.cfg.Gamma
	mix := func(l, s time.Duration) time.Duration { return time.Duration(g*float64(l) + (1-g)*float64(s)) }
	return Windows{PreWarm: mix(lw.PreWarm, sw.PreWarm), KeepAlive: mix(lw.KeepAlive, sw.KeepAlive),
		Reason: fmt.Sprintf("γ=%.2g: long (%v, %v; %s), short (%v, %v; %s)", g, lw.PreWarm, lw.KeepAlive, lw.Reason, sw.PreWarm, sw.KeepAlive, sw.Reason)}
}
