package batching

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestMLProxyOffsetsMatchTimes: an MLProxy driven on offsets (OffsetPolicy, the simulator's
// path) decides, adjusts Max_BS and estimates p95s exactly as one driven on the times base +
// offset, through random queues and batches with windows that expire, estimates that refresh
// and AIMD steps both ways; with a wall-clock base and with a live clock's monotonic one.
func TestMLProxyOffsetsMatchTimes(t *testing.T) {
	seen := map[string]int{}
	for _, base := range []time.Time{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()} {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 11))
			mutate := func(c *Config) {
				c.SLO = time.Duration(50+rng.IntN(200)) * time.Millisecond
				c.MLProxy.Interval = time.Duration(20+rng.IntN(100)) * time.Millisecond
				c.MLProxy.RefreshInterval = time.Duration(rng.IntN(3)) * 15 * time.Millisecond
				c.MLProxy.WindowSamples = 1 + rng.IntN(30)
				c.MLProxy.WindowAge = time.Duration(30+rng.IntN(300)) * time.Millisecond
				c.MLProxy.MaxBatchLimit = 4 + rng.IntN(12)
			}
			byTime := newTestMLProxy(t, mutate)
			rng = rand.New(rand.NewPCG(seed, 11)) // the same config for the second
			byOff := newTestMLProxy(t, mutate)
			byOff.SetBase(base)
			at := func(off int64) time.Time { return base.Add(time.Duration(off)) }
			var now int64
			for step := range 3000 {
				now += int64(rng.IntN(8)) * int64(time.Millisecond)
				if rng.IntN(3) == 0 {
					size := 1 + rng.IntN(byTime.MaxBatch()+2)
					dispatched := now - int64(rng.IntN(60))*int64(time.Millisecond)
					arr := make([]int64, size)
					times := make([]time.Time, size)
					for k := range arr {
						arr[k] = dispatched - int64(rng.IntN(40))*int64(time.Millisecond)
						times[k] = at(arr[k])
					}
					failed := rng.IntN(10) == 0
					byTime.Observe(Outcome{Size: size, Dispatched: at(dispatched), Completed: at(now), Arrivals: times, Failed: failed}, at(now))
					byOff.ObserveOffsets(size, dispatched, now, arr, failed, now)
				} else {
					n := rng.IntN(byTime.MaxBatch() + 3)
					q := Queue{Len: n}
					var oldest, earliest int64
					if n > 0 {
						oldest = now - int64(rng.IntN(100))*int64(time.Millisecond)
						earliest = oldest + int64(byTime.slo)
						q.Oldest = at(oldest)
						if rng.IntN(2) == 0 {
							earliest = oldest + int64(rng.IntN(300))*int64(time.Millisecond)
							q.EarliestDeadline = at(earliest)
						}
					}
					d := byTime.Decide(q, at(now))
					want := int64(-1)
					if !d.Next.IsZero() {
						want = int64(d.Next.Sub(base))
					}
					if k, nx := byOff.DecideOffsets(n, oldest, earliest, now); k != d.Dispatch || nx != want {
						t.Fatalf("seed %d step %d: offsets (%d, %d), times %+v (next %d)", seed, step, k, nx, d, want)
					}
				}
				if byTime.MaxBatch() != byOff.MaxBatch() || byTime.LastAdjustment() != byOff.LastAdjustment() {
					t.Fatalf("seed %d step %d: Max_BS %d/%d, adjustment %q/%q", seed, step, byTime.MaxBatch(), byOff.MaxBatch(), byTime.LastAdjustment(), byOff.LastAdjustment())
				}
				seen[byOff.LastAdjustment()]++
				for n := 1; n <= byTime.MaxBatch()+1; n++ {
					if a, b := byTime.P95(at(now), n), byOff.p95(now, n); a != b {
						t.Fatalf("seed %d step %d: p95(%d) %v by times, %v by offsets", seed, step, n, a, b)
					}
				}
			}
		}
	}
	for _, a := range []string{AdjustIncrease, AdjustDecreaseLatency, AdjustDecreaseTimeouts} {
		if seen[a] == 0 {
			t.Errorf("no step ended in %q: the runs do not exercise it", a)
		}
	}
}
