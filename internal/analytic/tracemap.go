package analytic

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/trace"
)

// FromTrace returns the MAP of a trace.MAP2 (the project's reader of BATCH's published fits and
// its arrival generator).
func FromTrace(m trace.MAP2) (*MAP, error) {
	d0 := [][]float64{m.D0[0][:], m.D0[1][:]}
	d1 := [][]float64{m.D1[0][:], m.D1[1][:]}
	a, err := NewMAP(d0, d1)
	if err != nil {
		return nil, fmt.Errorf("from trace MAP(2): %w", err)
	}
	return a, nil
}

// ToTrace returns a two-phase MAP as a trace.MAP2, e.g. to generate arrivals with the trace
// package; it fails for other phase counts.
func (a *MAP) ToTrace() (trace.MAP2, error) {
	if a.m != 2 {
		return trace.MAP2{}, fmt.Errorf("to trace MAP(2): the MAP has %d phases", a.m)
	}
	var m trace.MAP2
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			m.D0[i][j], m.D1[i][j] = a.d0[i*2+j], a.d1[i*2+j]
		}
	}
	return m, nil
}

// Interarrivals returns the gaps in seconds between consecutive arrivals of an arrival-list
// trace (the first gap is from time 0), or an error for a rate series.
func Interarrivals(t *trace.Trace) ([]float64, error) {
	if t.IsSeries() {
		return nil, fmt.Errorf("trace %s is a rate series, not an arrival list: cannot fit a MAP to it", t.Name)
	}
	out := make([]float64, len(t.Times))
	prev := int64(0)
	for i, at := range t.Times {
		out[i] = float64(int64(at)-prev) / 1e9
		prev = int64(at)
	}
	return out, nil
}
