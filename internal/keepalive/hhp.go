package keepalive

import (
	"fmt"
	"math"
	"time"
)

// HHPConfig configures the hybrid histogram policy.
type HHPConfig struct {
	HistogramConfig
	// History is how far back idle times are kept; 0 keeps the whole history (standard HHP).
	History time.Duration
	// Linger keeps the instance loaded for this long after every invocation when the windows
	// pre-warm (Windows.Linger): 0 is standard HHP; LingerOf gives LSTH's (issue #17: the fair
	// comparison gives HHP the linger sloserve adds to LSTH). ≥ 0.
	Linger time.Duration
}

// LingerOf is LSTH's linger for histogram settings c: BinWidth × (1 + Margin), HHP's keep-alive
// for a tail in the first bin (66 s with the default 1-minute bins and 10 % margin).
func LingerOf(c HistogramConfig) time.Duration {
	return time.Duration(math.Round(float64(c.BinWidth) * (1 + c.Margin)))
}

// NewLingerHHP is HHP given the linger sloserve gives LSTH, in both of its stages (issue #17's
// fair baseline): the instance lingers LingerOf(c) after every invocation, and HHP's one
// whole-history histogram decides the pauses from the idle times beyond the linger — LSTH with
// γ = 1 and a whole-history long window (the lsth-whole-g1 row), which is HHP plus the linger and
// nothing of LSTH's own (no 24 h window, no short histogram).
func NewLingerHHP(c HistogramConfig) (*LSTH, error) {
	return NewLSTH(LSTHConfig{HistogramConfig: c, Long: 1 << 62, Short: time.Hour, Gamma: 1})
}

// LingerHHPConfig is standard HHP with LSTH's linger (LingerOf) added to its windows only: the
// histogram still counts the idle times within the linger.
func LingerHHPConfig() HHPConfig {
	c := DefaultHHPConfig()
	c.Linger = LingerOf(c.HistogramConfig)
	return c
}

// DefaultHHPConfig returns the standard HHP settings (whole history).
func DefaultHHPConfig() HHPConfig {
	return HHPConfig{HistogramConfig: DefaultHistogramConfig()}
}

// Validate reports the first field of c that is out of range.
func (c HHPConfig) Validate() error {
	if err := c.HistogramConfig.Validate(); err != nil {
		return err
	}
	if c.History < 0 {
		return fmt.Errorf("keepalive.history: must be >= 0, got %v", c.History)
	}
	if c.Linger < 0 {
		return fmt.Errorf("keepalive.linger: must be >= 0, got %v", c.Linger)
	}
	return nil
}

// HHP is the hybrid histogram policy of Shahrad et al. ("Serverless in the Wild", ATC'20, §4.2),
// the baseline INFless §3.5 compares LSTH with: one idle-time histogram per function (1-minute
// bins over 4 hours); pre-warm = 5th percentile, keep-alive = 99th percentile minus pre-warm,
// with a 10 % margin; while the histogram is too flat (CV < 2) the standard keep-alive of the
// range (4 hours) applies, and when most idle times fall outside the range a forecast of the
// next idle time decides (hybridWindows).
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

// Windows returns the windows that apply after the last invocation (hybridWindows).
func (p *HHP) Windows(now time.Time) Windows {
	p.hist.evict(now)
	w, _ := hybridWindows(p.hist, p.cfg.HistogramConfig)
	if w.PreWarm > 0 {
		w.Linger = p.cfg.Linger
	}
	return w
}
