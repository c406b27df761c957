package sim

import (
	"context"
	"testing"
	"time"

	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// TestINFlessSlackLimitedBursts (issue #18 item 10): an ssd-like function — b = 1 only, 130 ms
// (180 ms CPU-only) against a 200 ms SLO, so a request that waits 70 ms misses — under
// burst300-like load: 20 bursts of 6 s of Poisson 120 rps from idle, 40 s apart. Every request
// that arrives before new instances are ready misses, and so does every one queued behind the
// backlog they leave. Without BurstHold and BurstDrain the policy releases a burst's instances
// 30 s after it and meets the next with the one LSTH keeps (half the requests miss); with them it
// keeps the peak's instances for a minute and sizes a burst's launches to drain the backlog within
// 100 ms: only the first burst, from no instance at all, loses its first seconds (3.4 %).
func TestINFlessSlackLimitedBursts(t *testing.T) {
	prof := profile.INFlessProfile{Model: "ssd-like", Points: []profile.INFlessPoint{
		{CPU: 2, GPU: 20, Batch: 1, Latency: 130 * time.Millisecond},
		{CPU: 2, Batch: 1, Latency: 180 * time.Millisecond},
		{CPU: 2, GPU: 20, Batch: 2, Latency: 250 * time.Millisecond}}}
	const bursts, every, length = 20, 40 * time.Second, 6 * time.Second
	run := func(o inflesspol.Options) float64 {
		var arr listArrivals
		src := trace.Poisson(120, 18)
		for at, ok := src.Next(); ok && at < bursts*every; at, ok = src.Next() {
			if at%every < length {
				arr = append(arr, at)
			}
		}
		fns := []ClusterFunction{{Name: "ssd-like", Profile: prof, SLO: slo.Spec{Threshold: 200 * time.Millisecond, Target: 0.95}, Arrivals: &arr}}
		p, err := inflesspol.New("infless", o)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultClusterConfig()
		cfg.Servers = 64
		r, err := RunCluster(context.Background(), cfg, fns, p)
		if err != nil {
			t.Fatal(err)
		}
		return 100 * (1 - r.Functions[0].SLOAttainment)
	}
	off := inflesspol.DefaultOptions()
	off.BurstHold, off.BurstDrain = 0, 0
	before, after := run(off), run(inflesspol.DefaultOptions())
	t.Logf("SLO violations: %.2f %% without BurstHold and BurstDrain, %.2f %% with them", before, after)
	if after > 5 {
		t.Errorf("with BurstHold and BurstDrain: %.2f %% of requests miss, want ≤ 5 %%", after)
	}
	if before <= 5 {
		t.Errorf("without them: %.2f %%, want > 5 %% (the test no longer shows the problem)", before)
	}
}
