package forecast

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Series is a count trace: Count[i] requests arrived in the Step-long interval that starts at
// T[i] (in units of Step, increasing). Callers build it from internal/trace's readers.
type Series struct {
	// Step is the length of one row's interval: 1 s for a "t_s" header, 1 min for "t_min".
	Step time.Duration
	// T holds each row's start, in Steps from the trace's beginning; Count its arrivals.
	T, Count []float64
}

// ErrBadSeries is returned by UnitMaxima for an empty or inconsistent Series.
var ErrBadSeries = errors.New("bad series")

// maxUnits bounds the units UnitMaxima returns (a year of minutes).
const maxUnits = 366 * 24 * 60

// UnitMaxima turns the series into the arrival monitor's view: the maximum rate (requests/s) of
// each unit. Rows shorter than the monitor's sample interval are fed through a Monitor (so a
// per-second trace gives the per-minute maxima of 5 s rates, as MArk measures them); rows as long
// as a unit (per-minute traces) become the unit's rate directly, count / unit. Rows longer than a
// unit are an error.
func (s Series) UnitMaxima(cfg MonitorConfig) ([]float64, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(s.T) == 0 || len(s.T) != len(s.Count) {
		return nil, fmt.Errorf("%w: %d times and %d counts", ErrBadSeries, len(s.T), len(s.Count))
	}
	for i, t := range s.T {
		if !(t >= 0) || t > maxUnits*float64(cfg.Unit/s.Step+1) || (i > 0 && t <= s.T[i-1]) {
			return nil, fmt.Errorf("%w: time %v at row %d must be ≥ 0, increasing and bounded", ErrBadSeries, t, i)
		}
		if c := s.Count[i]; !(c >= 0) || math.IsInf(c, 1) {
			return nil, fmt.Errorf("%w: count %v at row %d must be finite and ≥ 0", ErrBadSeries, c, i)
		}
	}
	switch {
	case s.Step == cfg.Unit:
		out := make([]float64, 0, len(s.Count))
		prev := -1.0
		for i, t := range s.T {
			for gap := t - prev - 1; gap > 0 && len(out) < maxUnits; gap-- {
				out = append(out, 0) // missing rows are silent units
			}
			prev = t
			out = append(out, s.Count[i]/cfg.Unit.Seconds())
		}
		return out, nil
	case s.Step <= cfg.SampleInterval:
		span := time.Duration((s.T[len(s.T)-1] + 1) * float64(s.Step))
		cfg.MaxHistory = max(cfg.Window, int(span/cfg.Unit)+2)
		m, err := NewMonitor(cfg, nil)
		if err != nil {
			return nil, err
		}
		var t0 time.Time
		for i, t := range s.T {
			m.Observe(int(s.Count[i]), t0.Add(time.Duration(t*float64(s.Step))))
		}
		m.Observe(0, t0.Add(span)) // close the last sample
		return m.History(), nil
	default:
		return nil, fmt.Errorf("series step %v is neither a unit (%v) nor at most a sample (%v)", s.Step, cfg.Unit, cfg.SampleInterval)
	}
}
