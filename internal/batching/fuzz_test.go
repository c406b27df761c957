package batching

import (
	"testing"
	"time"
)

// FuzzDecide checks the Policy invariants on arbitrary queue snapshots, including inconsistent
// ones (deadline before arrival, negative lengths): no panic, dispatch within [0, min(Len,
// MaxBatch)], and a wait always has a Next after now and no later than the earliest deadline.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(0), 3, int64(0), int64(200e6), int64(10e6), 2, int64(30e6))
	f.Add(uint8(1), 1, int64(-5e6), int64(1e6), int64(0), 5, int64(300e6))
	f.Add(uint8(2), 9, int64(0), int64(0), int64(1e9), 0, int64(0))
	f.Fuzz(func(t *testing.T, which uint8, n int, oldest, deadline, now int64, obsSize int, obsLatency int64) {
		cfg := DefaultConfig()
		cfg.Policy = Names()[int(which)%len(Names())]
		cfg.MLProxy.RefreshInterval = 0
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		base := time.Unix(1_700_000_000, 0)
		at := base.Add(time.Duration(now))
		p.Observe(Outcome{Size: obsSize % 200, Dispatched: at, Completed: at.Add(time.Duration(obsLatency)),
			Arrivals: []time.Time{at.Add(-time.Duration(obsLatency))}}, at)
		q := Queue{Len: n % 1000, Free: 1}
		if q.Len > 0 {
			q.Oldest = base.Add(time.Duration(oldest))
			q.EarliestDeadline = base.Add(time.Duration(deadline))
		}
		d := p.Decide(q, at)
		if d.Dispatch < 0 || d.Dispatch > max(q.Len, 0) || d.Dispatch > p.MaxBatch() {
			t.Fatalf("dispatch %d with Len %d, MaxBatch %d", d.Dispatch, q.Len, p.MaxBatch())
		}
		if d.Reason == "" {
			t.Fatalf("decision without reason: %+v", d)
		}
		if d.Dispatch == 0 && q.Len > 0 {
			if !d.Next.After(at) || d.Next.After(q.EarliestDeadline) {
				t.Fatalf("wait until %v: now %v, earliest deadline %v", d.Next, at, q.EarliestDeadline)
			}
		}
	})
}
