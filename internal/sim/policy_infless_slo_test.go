package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
)

// TestINFlessEveryFunctionMeetsTarget is issue #18 item 10 (EVALUATION.md §4: per function, not
// in aggregate): OSVT + Q&A on the busy cluster, Azure fn2–fn4 12:00–13:00 rescaled to a 100 rps
// peak per function, seed 1. Every function of the default `infless` must meet its 95 % target.
// ssd has only b = 1 configurations with t_exec > t_slo/2 (126–188 ms at 200 ms): with Eq. 1's
// r_up = ⌊1/t_exec⌋ and per-instance queues (the `infless-Eq.1` row: QueueCap, BoundQueues and
// Backlog off — the default before issue #18) it missed on 8.9 % of its requests while the
// aggregate read 0.7 %, which the second case pins so that the test fails if the fixes stop
// mattering. Skips without ../shared/data.
func TestINFlessEveryFunctionMeetsTarget(t *testing.T) {
	data := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(filepath.Join(data, "profiles", "infless")); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	var paths []string
	for _, f := range []string{"fn2.rpm.csv", "fn3.rpm.csv", "fn4.rpm.csv"} {
		paths = append(paths, filepath.Join(data, "traces", "azure-functions", f))
	}
	run := func(o inflesspol.Options) *ClusterResult {
		t.Helper()
		fns, err := LoadWorkload(filepath.Join(data, "profiles", "infless"), paths, OSVTQA,
			WorkloadOptions{PeakRPS: 100, From: 12 * time.Hour, Duration: time.Hour, SLOTarget: 0.95, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := inflesspol.New("infless", o)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultClusterConfig()
		cfg.Servers = BusyClusterServers
		r, err := RunCluster(context.Background(), cfg, fns, p)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range r.Functions {
			t.Logf("%-18s attainment %.4f (target %.2f), %d requests", fns[i].Name, f.SLOAttainment, f.SLO.Target, f.Requests)
		}
		return r
	}
	t.Run("default meets every target", func(t *testing.T) {
		r := run(inflesspol.DefaultOptions())
		for i, f := range r.Functions {
			if f.SLOAttainment < f.SLO.Target {
				t.Errorf("%s: attainment %.4f < target %.2f (aggregate %.4f)", OSVTQA[i].Model, f.SLOAttainment, f.SLO.Target, r.Summary.SLOAttainment)
			}
		}
	})
	t.Run("Eq. 1 as printed misses on ssd", func(t *testing.T) {
		o := inflesspol.DefaultOptions()
		o.QueueCap, o.BoundQueues, o.Backlog = false, false, false
		// On the exact profile: with the ±10 % error Eq. 1 as printed misses on resnet-50 too
		// (0.77), and the aggregate with it.
		o.Prediction = inflesspol.PredictionExact
		r := run(o)
		if ssd := r.Functions[0]; ssd.SLOAttainment >= ssd.SLO.Target || r.Summary.SLOAttainment < ssd.SLO.Target {
			t.Errorf("ssd attainment %.4f, aggregate %.4f: want ssd below its target %.2f while the aggregate meets it", ssd.SLOAttainment, r.Summary.SLOAttainment, ssd.SLO.Target)
		}
	})
}
