package metrics

import (
	"math"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSLOBuckets(t *testing.T) {
	for _, th := range []time.Duration{64 * time.Millisecond, 100 * time.Millisecond, 3 * time.Second, 700 * time.Microsecond} {
		t.Run(th.String(), func(t *testing.T) {
			b := SLOBuckets(th)
			if !sort.Float64sAreSorted(b) {
				t.Fatalf("buckets not sorted: %v", b)
			}
			found := false
			for i, v := range b {
				found = found || v == th.Seconds()
				if i > 0 && v == b[i-1] {
					t.Fatalf("duplicate bound %v in %v", v, b)
				}
				// Dense (≤ 10 % apart, with rounding slack) from a quarter to twice the threshold.
				if i > 0 && b[i-1] >= 0.25*th.Seconds() && v <= 1.95*th.Seconds() && v/b[i-1] > 1.102 {
					t.Errorf("bounds %v and %v are %.1f %% apart, want ≤ 10 %%", b[i-1], v, 100*(v/b[i-1]-1))
				}
			}
			if !found {
				t.Errorf("threshold %v is not a bound of %v", th.Seconds(), b)
			}
		})
	}
}

func TestSLOWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	total := prometheus.NewCounter(prometheus.CounterOpts{Name: "t"})
	bad := prometheus.NewCounter(prometheus.CounterOpts{Name: "b"})
	w := &sloWindow{now: func() time.Time { return now }, total: total, bad: bad}
	if got := w.attainment(); got != 1 {
		t.Errorf("attainment with no requests = %v, want 1", got)
	}
	th := 100 * time.Millisecond
	w.observe(th, OutcomeOK, 50*time.Millisecond)
	w.observe(th, OutcomeOK, 150*time.Millisecond) // too slow
	w.observe(th, OutcomeTimeout, 100*time.Millisecond)
	w.observe(th, OutcomeBadRequest, time.Millisecond) // not eligible
	w.observe(th, OutcomeCanceled, time.Millisecond)   // not eligible
	if got, want := w.attainment(), 1.0/3; math.Abs(got-want) > 1e-9 {
		t.Errorf("attainment = %v, want %v", got, want)
	}
	if got := testutil.ToFloat64(total); got != 3 {
		t.Errorf("eligible requests = %v, want 3", got)
	}
	if got := testutil.ToFloat64(bad); got != 2 {
		t.Errorf("violations = %v, want 2", got)
	}
	now = now.Add(SLOWindow / 2)
	w.observe(th, OutcomeOK, time.Millisecond)
	if got, want := w.attainment(), 2.0/4; math.Abs(got-want) > 1e-9 {
		t.Errorf("attainment half a window later = %v, want %v", got, want)
	}
	now = now.Add(SLOWindow/2 + SLOWindow/SLOWindowSlots)
	if got := w.attainment(); got != 1 {
		t.Errorf("attainment once the first requests left the window = %v, want 1", got)
	}
}
