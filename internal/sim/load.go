package sim

import (
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/trace"
)

// Load returns the trace's mean rate and its highest one-minute mean rate.
func Load(t *trace.Trace) LoadStats {
	s := LoadStats{MeanRPS: t.MeanRate()}
	if t.IsSeries() {
		w := max(1, int(math.Ceil(float64(time.Minute)/float64(t.Step))))
		var sum float64
		for i, r := range t.Rates {
			sum += r
			if i >= w {
				sum -= t.Rates[i-w]
			}
			if n := min(i+1, w); i+1 >= w || i == len(t.Rates)-1 {
				s.PeakRPS = max(s.PeakRPS, sum/float64(n))
			}
		}
		return s
	}
	for _, c := range trace.Counts(t.Arrivals(0), time.Minute, t.Duration()) {
		s.PeakRPS = max(s.PeakRPS, float64(c)/60)
	}
	return s
}
