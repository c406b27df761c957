package keepalive

import (
	"fmt"
	"time"
)

// HHPConfig configures the hybrid histogram policy.
type HHPConfig struct {
	HistogramConfig
	// MinCV is the coefficient of variation of the bin counts below which the histogram is
	// not representative (Shahrad et al.: 2); ≥ 0.
	MinCV float64
	// MaxOOBFraction is the fraction of out-of-bounds idle times above which the histogram
	// cannot describe the function (Shahrad et al. switch to an ARIMA forecast there; sloserve
	// falls back to the fixed keep-alive); in (0, 1].
	MaxOOBFraction float64
	// History is how far back idle times are kept; 0 keeps the whole history (standard HHP).
	History time.Duration
}

// DefaultHHPConfig returns the standard HHP settings.
func DefaultHHPConfig() HHPConfig {
	return HHPConfig{HistogramConfig: DefaultHistogramConfig(), MinCV: 2, MaxOOBFraction: 0.5}
}

// Validate reports the first field of c that is out of range.
func (c HHPConfig) Validate() error {
	if err := c.HistogramConfig.Validate(); err != nil {
		return err
	}
	switch {
	case c.MinCV < 0:
		return fmt.Errorf("keepalive.min_cv: must be >= 0, got %v", c.MinCV)
	case !(c.MaxOOBFraction > 0 && c.MaxOOBFraction <= 1):
		return fmt.Errorf("keepalive.max_oob_fraction: must be in (0, 1], got %v", c.MaxOOBFraction)
	case c.History < 0:
		return fmt.Errorf("keepalive.history: must be >= 0, got %v", c.History)
	}
	return nil
}

// HHP is the hybrid histogram policy of Shahrad et al. ("Serverless in the Wild", ATC'20, §4.2),
// the baseline INFless §3.5 compares LSTH with: one idle-time histogram per function (1-minute
// bins over 4 hours); pre-warm = 5th percentile, keep-alive = 99th percentile minus pre-warm,
// with a 10 % margin; while the histogram has too few samples, is too flat (CV < 2) or most idle
// times fall outside its range, a fixed 10-minute keep-alive applies.
type HHP struct {
	cfg  HHPConfig
	hist *histogram
	last time.Time
	seen bool
}

var _ Policy = (*HHP)(nil)

// NewHHP returns an HHP policy with no history.
func NewHHP(cfg HHPConfig) (*HHP, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &HHP{cfg: cfg, hist: newHistogram(cfg.BinWidth, cfg.Range, cfg.History)}, nil
}

// Observe records an invocation busy from start to end; the time since the previous
// invocation's end is an idle time.
func (p *HHP) Observe(start, end time.Time) {
	if p.seen {
		p.hist.add(start, start.Sub(p.last))
	}
	if end.Before(start) {
		end = start
	}
	p.last, p.seen = end, true
}

// Windows returns the windows that apply after the last invocation.
func (p *HHP) Windows(now time.Time) Windows {
	p.hist.evict(now)
	fb := Windows{KeepAlive: p.cfg.Fallback}
	n := p.hist.inBounds()
	switch {
	case n < p.cfg.MinSamples:
		fb.Reason = fmt.Sprintf("fixed %v: %d idle times < %d", p.cfg.Fallback, n, p.cfg.MinSamples)
		return fb
	case float64(p.hist.oob) > p.cfg.MaxOOBFraction*float64(p.hist.total):
		fb.Reason = fmt.Sprintf("fixed %v: %d of %d idle times beyond %v", p.cfg.Fallback, p.hist.oob, p.hist.total, p.cfg.Range)
		return fb
	}
	if cv := p.hist.cv(); cv < p.cfg.MinCV {
		fb.Reason = fmt.Sprintf("fixed %v: histogram CV %.2f < %.2f", p.cfg.Fallback, cv, p.cfg.MinCV)
		return fb
	}
	pre, keep, _ := windowsOf(p.hist, p.cfg.HistogramConfig)
	return Windows{PreWarm: pre, KeepAlive: keep, Reason: fmt.Sprintf("histogram of %d idle times: p%g/p%g", n,
		p.cfg.HeadPercentile, p.cfg.TailPercentile)}
}
