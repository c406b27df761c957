package forecast

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Series is a two-column count trace: Count[i] requests arrived in the Step-long interval that
// starts at T[i] (in units of Step). It is the minimal reader the backtest command needs; the
// project's trace readers live in internal/trace.
type Series struct {
	// Step is the length of one row's interval: 1 s for a "t_s" header, 1 min for "t_min".
	Step time.Duration
	// T holds each row's start, in Steps from the trace's beginning; Count its arrivals.
	T, Count []float64
}

// ErrBadSeries wraps every parse error of ReadSeries.
var ErrBadSeries = errors.New("bad series")

// maxUnits bounds the units UnitMaxima returns (a year of minutes).
const maxUnits = 366 * 24 * 60

// maxSeriesRows bounds what ReadSeries accepts (a year of seconds), so bad input cannot exhaust memory.
const maxSeriesRows = 366 * 24 * 3600

// ReadSeries parses "t_s,count" (per-second) or "t_min,count" (per-minute) CSV with a header line.
// Times must be non-negative and non-decreasing (rows with a repeated time are merged); counts
// non-negative. Blank lines and lines
// starting with '#' (attribution comments) are skipped.
func ReadSeries(r io.Reader) (Series, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	var s Series
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		a, b, ok := strings.Cut(text, ",")
		if !ok {
			return Series{}, fmt.Errorf("%w: line %d: want two comma-separated columns, got %q", ErrBadSeries, line, clip(text))
		}
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if s.Step == 0 {
			switch strings.ToLower(a) {
			case "t_s":
				s.Step = time.Second
			case "t_min":
				s.Step = time.Minute
			default:
				return Series{}, fmt.Errorf("%w: line %d: header must start with t_s or t_min, got %q", ErrBadSeries, line, clip(a))
			}
			continue
		}
		t, err1 := strconv.ParseFloat(a, 64)
		c, err2 := strconv.ParseFloat(b, 64)
		if err1 != nil || err2 != nil || math.IsNaN(t) || math.IsNaN(c) || math.IsInf(t, 0) || math.IsInf(c, 0) {
			return Series{}, fmt.Errorf("%w: line %d: want two numbers, got %q", ErrBadSeries, line, clip(text))
		}
		if t < 0 || c < 0 || t > maxSeriesRows {
			return Series{}, fmt.Errorf("%w: line %d: time %v and count %v must be in range", ErrBadSeries, line, t, c)
		}
		if n := len(s.T); n > 0 && t <= s.T[n-1] {
			if t < s.T[n-1] {
				return Series{}, fmt.Errorf("%w: line %d: time %v goes backwards", ErrBadSeries, line, t)
			}
			s.Count[n-1] += c // a repeated time (the Twitter trace repeats hour boundaries): merge
			continue
		}
		if len(s.T) >= maxSeriesRows {
			return Series{}, fmt.Errorf("%w: more than %d rows", ErrBadSeries, maxSeriesRows)
		}
		s.T = append(s.T, t)
		s.Count = append(s.Count, c)
	}
	if err := sc.Err(); err != nil {
		return Series{}, fmt.Errorf("%w: line %d: %v", ErrBadSeries, line+1, err)
	}
	if s.Step == 0 || len(s.T) == 0 {
		return Series{}, fmt.Errorf("%w: no header or no rows", ErrBadSeries)
	}
	return s, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

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
		return nil, fmt.Errorf("%w: no rows", ErrBadSeries)
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
