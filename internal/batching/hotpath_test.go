package batching_test

import (
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// BenchmarkHotPathPerRequest measures the per-request cost of what the simulator calls for every
// request from these packages: one arrival from a Poisson trace, one Decide, the amortised
// Observe of its batch and one Recorder.Completed. 1e9 / (ns/op) is the ceiling this code puts
// on simulated requests per wall second.
func BenchmarkHotPathPerRequest(b *testing.B) {
	for _, name := range batching.Names() {
		b.Run(name, func(b *testing.B) {
			cfg := batching.DefaultConfig()
			cfg.Policy = name
			p, err := batching.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			rec := slo.NewRecorder(slo.DefaultSpec())
			src := trace.Poisson(2000, 1)
			epoch := time.Date(2017, 5, 25, 0, 0, 0, 0, time.UTC)
			arr := make([]time.Time, 0, 256)
			svc := 20 * time.Millisecond
			for b.Loop() {
				off, _ := src.Next()
				now := epoch.Add(off)
				arr = append(arr, now)
				d := p.Decide(batching.Queue{Len: len(arr), Oldest: arr[0], EarliestDeadline: arr[0].Add(cfg.SLO), Free: 1}, now)
				if d.Dispatch == 0 && !d.Next.IsZero() && d.Next.Sub(now) < 500*time.Microsecond {
					now = d.Next // the timer fires before the next arrival (on average)
					d = p.Decide(batching.Queue{Len: len(arr), Oldest: arr[0], EarliestDeadline: arr[0].Add(cfg.SLO), Free: 1}, now)
				}
				if d.Dispatch > 0 {
					done := now.Add(svc)
					p.Observe(batching.Outcome{Size: d.Dispatch, Dispatched: now, Completed: done, Arrivals: arr[:d.Dispatch]}, done)
					for _, a := range arr[:d.Dispatch] {
						rec.Completed(done.Sub(a), slo.TierVM)
					}
					rec.Batch(d.Dispatch)
					arr = append(arr[:0], arr[d.Dispatch:]...)
				}
			}
		})
	}
}
