package keepalive

import (
	"fmt"
	"math"
	"time"
)

// Windows is a keep-alive decision, both windows measured as in Shahrad et al.: after an
// invocation ends, the instance is unloaded and reloaded PreWarm later (kept loaded when
// PreWarm is 0), then kept loaded for KeepAlive. LSTH adds Linger: the instance first stays
// loaded for Linger (a burst may go on), is unloaded, and is reloaded at PreWarm as in HHP.
// Loaded says which gaps after the invocation find the instance loaded.
type Windows struct {
	// PreWarm is how long after the last invocation the instance is (re)loaded.
	PreWarm time.Duration
	// KeepAlive is how long the instance stays loaded once (re)loaded.
	KeepAlive time.Duration
	// Linger, when PreWarm > 0, keeps the instance loaded for the first Linger after the
	// invocation before it is unloaded until PreWarm: loaded during [0, Linger] ∪ [PreWarm,
	// PreWarm+KeepAlive] (one interval when Linger ≥ PreWarm). 0 (no linger) for HHP and the
	// fixed policy, whose windows are Shahrad et al.'s; LSTH sets it (LSTH.Windows).
	Linger time.Duration
	// Reason explains how the windows were derived.
	Reason string
}

// Loaded reports whether the instance is loaded gap after the last invocation ended: during
// [0, PreWarm+KeepAlive] when PreWarm is 0 (or Linger reaches PreWarm), else during
// [0, Linger] (when Linger > 0) and [PreWarm, PreWarm+KeepAlive].
func (w Windows) Loaded(gap time.Duration) bool {
	switch {
	case gap > w.PreWarm+w.KeepAlive:
		return false
	case gap >= w.PreWarm:
		return true
	default:
		return w.Linger > 0 && gap <= w.Linger
	}
}

// loadedFor returns how long the instance is loaded during the first d after the last
// invocation ended (the idle instance-time of a gap of d, or of a trace that ends d later).
func (w Windows) loadedFor(d time.Duration) time.Duration {
	d = max(d, 0)
	if w.PreWarm <= 0 || w.Linger >= w.PreWarm {
		return min(d, w.PreWarm+w.KeepAlive)
	}
	return min(d, w.Linger) + min(max(d-w.PreWarm, 0), w.KeepAlive)
}

// Policy decides pre-warm and keep-alive windows for one function from its invocation history.
// Implementations are pure: Observe records that the function was invoked at start and kept
// its instance busy until end (end == start for an instantaneous invocation; calls come in time
// order), so that the idle time before it is start minus the previous end (Shahrad et al.'s
// "idle time"); Windows reports the windows that apply after the last invocation's end, at now.
// A Policy belongs to one goroutine.
type Policy interface {
	Observe(start, end time.Time)
	Windows(now time.Time) Windows
}

// DefaultFixedKeepAlive is the fixed keep-alive baseline and the histogram policies' fallback:
// 10 minutes (AWS Lambda's window, Shahrad et al. §4; Cocktail's idle timeout).
const DefaultFixedKeepAlive = 10 * time.Minute

// Fixed is the fixed keep-alive policy: never unload early, keep alive for a constant time.
type Fixed struct {
	// KeepAlive is the constant keep-alive window.
	KeepAlive time.Duration
}

var _ Policy = (*Fixed)(nil)

// Observe ignores the invocation: a fixed policy learns nothing.
func (f *Fixed) Observe(start, end time.Time) {}

// Windows returns no pre-warm and the fixed keep-alive.
func (f *Fixed) Windows(time.Time) Windows {
	return Windows{KeepAlive: f.KeepAlive, Reason: fmt.Sprintf("fixed keep-alive %v", f.KeepAlive)}
}

// HistogramConfig holds the settings shared by HHP and LSTH histograms (Shahrad et al.,
// "Serverless in the Wild", ATC'20, §4.2).
type HistogramConfig struct {
	// BinWidth is the width of one idle-time bin (Shahrad et al.: 1 minute); > 0.
	BinWidth time.Duration
	// Range is the largest idle time the histogram holds; longer ones are out of bounds
	// (HHP: 4 hours); ≥ BinWidth.
	Range time.Duration
	// HeadPercentile selects the pre-warm window (5th percentile); in (0, 100).
	HeadPercentile float64
	// TailPercentile selects the keep-alive window (99th percentile); in (HeadPercentile, 100].
	TailPercentile float64
	// Margin widens the windows: pre-warm = head × (1 − Margin), keep-alive ends at
	// tail × (1 + Margin) (Shahrad et al.: 10 %); in [0, 1).
	Margin float64
	// MinSamples is the fewest in-bounds idle times a histogram needs before its percentiles
	// are used; below it the pattern is uncertain. Shahrad et al. have no such floor (an empty
	// histogram has CV 0 and is uncertain anyway): 1. ≥ 1.
	MinSamples int
	// Fallback is the keep-alive of an uncertain pattern (no pre-warm): Shahrad et al.'s
	// "standard keep-alive" of the histogram's range, 4 hours. > 0.
	Fallback time.Duration
	// MinCV is the coefficient of variation of the bin counts below which the histogram is not
	// representative (Shahrad et al.: 2); ≥ 0.
	MinCV float64
	// MaxOOBFraction is the fraction of out-of-bounds idle times at or above which the pattern
	// is out of bounds and a time-series forecast of the next idle time decides (Shahrad et al.:
	// 50 %); in (0, 1].
	MaxOOBFraction float64
	// ForecastMargin widens the out-of-bounds windows around the forecast f: loaded during
	// [f × (1 − margin), f × (1 + margin)] (Shahrad et al.: 15 %); in [0, 1).
	ForecastMargin float64
}

// DefaultHistogramConfig returns Shahrad et al.'s hybrid-histogram settings: 1-minute bins
// over 4 hours, 5th/99th percentiles with a 10 % margin, CV threshold 2, out of bounds at 50 %
// with a 15 % forecast margin, and the 4-hour standard keep-alive for uncertain patterns.
func DefaultHistogramConfig() HistogramConfig {
	return HistogramConfig{BinWidth: time.Minute, Range: 4 * time.Hour, HeadPercentile: 5, TailPercentile: 99,
		Margin: 0.10, MinSamples: 1, Fallback: 4 * time.Hour, MinCV: 2, MaxOOBFraction: 0.5, ForecastMargin: 0.15}
}

// Validate reports the first field of c that is out of range.
func (c HistogramConfig) Validate() error {
	switch {
	case c.BinWidth <= 0:
		return fmt.Errorf("keepalive.bin_width: must be > 0, got %v", c.BinWidth)
	case c.Range < c.BinWidth:
		return fmt.Errorf("keepalive.range: must be >= bin_width %v, got %v", c.BinWidth, c.Range)
	case !(c.HeadPercentile > 0 && c.HeadPercentile < 100):
		return fmt.Errorf("keepalive.head_percentile: must be in (0, 100), got %v", c.HeadPercentile)
	case !(c.TailPercentile > c.HeadPercentile && c.TailPercentile <= 100):
		return fmt.Errorf("keepalive.tail_percentile: must be in (head_percentile, 100], got %v", c.TailPercentile)
	case !(c.Margin >= 0 && c.Margin < 1):
		return fmt.Errorf("keepalive.margin: must be in [0, 1), got %v", c.Margin)
	case c.MinSamples < 1:
		return fmt.Errorf("keepalive.min_samples: must be >= 1, got %d", c.MinSamples)
	case c.Fallback <= 0:
		return fmt.Errorf("keepalive.fallback: must be > 0, got %v", c.Fallback)
	case c.MinCV < 0:
		return fmt.Errorf("keepalive.min_cv: must be >= 0, got %v", c.MinCV)
	case !(c.MaxOOBFraction > 0 && c.MaxOOBFraction <= 1):
		return fmt.Errorf("keepalive.max_oob_fraction: must be in (0, 1], got %v", c.MaxOOBFraction)
	case !(c.ForecastMargin >= 0 && c.ForecastMargin < 1):
		return fmt.Errorf("keepalive.forecast_margin: must be in [0, 1), got %v", c.ForecastMargin)
	}
	return nil
}

// pattern is how one histogram describes a function (Shahrad et al. §4.2).
type pattern int

const (
	patternCertain   pattern = iota // representative histogram: percentiles decide
	patternUncertain                // too flat or too few samples: standard keep-alive
	patternOOB                      // most idle times beyond the range: forecast decides
)

// hybridWindows is Shahrad et al.'s hybrid histogram decision on one histogram:
//   - out of bounds (≥ MaxOOBFraction of the idle times beyond Range): a time-series forecast f
//     of the next idle time; loaded during [f(1−m), f(1+m)], m = ForecastMargin. Shahrad et al.
//     fit an ARIMA model; sloserve uses the ARIMA(0,1,0) (random-walk) forecast, the last idle
//     time — no forecasting library is allowed here, and for the rare, long gaps this case
//     covers the last gap is what a low-order fit returns anyway;
//   - uncertain (fewer than MinSamples in-bounds idle times, or bin-count CV < MinCV): no
//     pre-warm and the standard keep-alive Fallback (the range, 4 h);
//   - otherwise the head and tail percentiles (windowsOf).
func hybridWindows(h *histogram, c HistogramConfig) (Windows, pattern) {
	n := h.inBounds()
	switch {
	case h.total > 0 && float64(h.oob) >= c.MaxOOBFraction*float64(h.total):
		f := float64(h.last)
		pre := time.Duration(f * (1 - c.ForecastMargin))
		return Windows{PreWarm: pre, KeepAlive: time.Duration(f*(1+c.ForecastMargin)) - pre,
			Reason: fmt.Sprintf("out of bounds: %d of %d idle times beyond %v; forecast %v", h.oob, h.total, c.Range, h.last)}, patternOOB
	case n < c.MinSamples:
		return Windows{KeepAlive: c.Fallback, Reason: fmt.Sprintf("uncertain: %d idle times < %d; standard keep-alive %v", n, c.MinSamples, c.Fallback)}, patternUncertain
	}
	if cv := h.cv(); cv < c.MinCV {
		return Windows{KeepAlive: c.Fallback, Reason: fmt.Sprintf("uncertain: histogram CV %.2f < %.2f; standard keep-alive %v", cv, c.MinCV, c.Fallback)}, patternUncertain
	}
	pre, keep, _ := windowsOf(h, c)
	return Windows{PreWarm: pre, KeepAlive: keep, Reason: fmt.Sprintf("histogram of %d idle times: p%g/p%g", n, c.HeadPercentile, c.TailPercentile)}, patternCertain
}

// windowsOf derives (pre-warm, keep-alive) from one histogram: head = lower edge of the
// head-percentile bin, tail = upper edge of the tail-percentile bin (Shahrad et al. use bin
// edges so that the whole bin is covered); pre-warm = head × (1 − margin); the instance stays
// loaded until tail × (1 + margin), so keep-alive = that − pre-warm. ok is false when the
// histogram has no in-bounds sample.
func windowsOf(h *histogram, c HistogramConfig) (pre, keep time.Duration, ok bool) {
	hb, tb := h.percentile(c.HeadPercentile), h.percentile(c.TailPercentile)
	if hb < 0 {
		return 0, 0, false
	}
	head := time.Duration(hb) * c.BinWidth
	tail := time.Duration(tb+1) * c.BinWidth
	pre = time.Duration(math.Floor(float64(head) * (1 - c.Margin)))
	end := time.Duration(math.Ceil(float64(tail) * (1 + c.Margin)))
	return pre, end - pre, true
}
