package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/slo"
)

// lendScript launches one toy instance on 2 threads at the first step and lends it 20 % of the
// GPU (policy.ClusterDecision.Lend) in the steps before until, then takes it back.
type lendScript struct {
	until time.Duration
	views []policy.ClusterView
}

func (*lendScript) Name() string { return "lend-script" }

func (p *lendScript) Control(v policy.ClusterView, now time.Time) (policy.ClusterDecision, error) {
	p.views = append(p.views, v)
	var d policy.ClusterDecision
	if len(v.Functions[0].Instances) == 0 {
		d.Launch = []policy.InstanceLaunch{{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 2}, Batch: 1, Bounds: infless.Bounds{Up: 100}}}
		return d, nil
	}
	d.Lend = map[int]cluster.Resources{}
	if now.Sub(DefaultEpoch) < p.until {
		d.Lend[v.Functions[0].Instances[0].ID] = cluster.Resources{CPU: 2, GPU: 20}
	}
	return d, nil
}

// TestRunClusterLend: a lent configuration's service time is what the instance serves at (toy:
// 7 ms on 2 threads, 3.5 ms with 20 % of a GPU), lent resources count as allocated, a batch in
// flight when the configuration changes finishes its remaining work at the new speed, and taking
// the lending back restores the launch configuration's speed and allocation.
func TestRunClusterLend(t *testing.T) {
	run := func(until time.Duration, arrivals listArrivals) (*ClusterResult, *lendScript) {
		t.Helper()
		cfg := DefaultClusterConfig()
		cfg.Servers, cfg.StartDelay, cfg.NoiseCV = 2, 0, 0
		p := &lendScript{until: until}
		fns := []ClusterFunction{{Name: "toy", Profile: toyProfile(), SLO: slo.Spec{Threshold: 100 * time.Millisecond, Target: 0.95}, Arrivals: &arrivals}}
		r, err := RunCluster(context.Background(), cfg, fns, p)
		if err != nil {
			t.Fatal(err)
		}
		return r, p
	}
	// One request per second at 1.5 s, 2.5 s, … 10.5 s (lending starts at the 1 s step).
	every := func() listArrivals {
		var a listArrivals
		for k := 1; k <= 10; k++ {
			a = append(a, time.Duration(k)*time.Second+500*time.Millisecond)
		}
		return a
	}
	for _, tc := range []struct {
		name     string
		until    time.Duration
		wantMax  float64 // ms
		wantFrag float64
	}{
		{"never lent", 0, 7, 1 - 2*cluster.DefaultBeta/(16*cluster.DefaultBeta+100)},
		{"always lent", time.Hour, 3.5, 1 - (2*cluster.DefaultBeta+20)/(16*cluster.DefaultBeta+100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, p := run(tc.until, every())
			s := r.Summary
			if s.Completed != 10 || math.Abs(s.LatencyMS.Max-tc.wantMax) > 0.01 || math.Abs(s.LatencyMS.P50-tc.wantMax) > 0.01 {
				t.Errorf("completed %d, latency p50 %v max %v ms; want 10 at %v ms", s.Completed, s.LatencyMS.P50, s.LatencyMS.Max, tc.wantMax)
			}
			// fragment_ratio_filled counts the loan as allocated (fragment_ratio, as free).
			// The first second holds no lending (the instance starts at 0), the rest does: the
			// time-averaged ratio is between the two states; the last step's view shows what
			// the instance runs on.
			if f := s.Extra["fragment_ratio_filled"]; tc.until > 0 && !(f < 1-2*cluster.DefaultBeta/(16*cluster.DefaultBeta+100)-0.01 && f >= tc.wantFrag-1e-9) ||
				tc.until == 0 && math.Abs(f-tc.wantFrag) > 1e-9 {
				t.Errorf("fragment ratio %v, want %v (after the first second)", f, tc.wantFrag)
			}
			last := p.views[len(p.views)-1]
			in := last.Functions[0].Instances[0]
			wantRes := cluster.Resources{CPU: 2}
			if tc.until > 0 {
				wantRes.GPU = 20
			}
			if in.Resources != wantRes || in.Launch.Resources != (cluster.Resources{CPU: 2}) || last.Cluster.Used(0) != wantRes {
				t.Errorf("last view: instance runs on %+v (launch %+v), server holds %+v; want %+v", in.Resources, in.Launch.Resources, last.Cluster.Used(0), wantRes)
			}
		})
	}
	t.Run("batch in flight", func(t *testing.T) {
		// Lent at the 1 s step, taken back at the 3 s step. A request at 0.996 s has 3 of its
		// 7 ms left at 1 s, done at 3.5/7 of the speed: 1.5 ms, latency 5.5 ms. One at 2.998 s
		// runs 2 ms at 3.5 ms a batch (4/7 of its work), the rest at 7 ms: 3 ms, latency 5 ms.
		for _, c := range []struct {
			at   time.Duration
			want float64
		}{{996 * time.Millisecond, 5.5}, {2998 * time.Millisecond, 5}} {
			r, _ := run(3*time.Second, listArrivals{c.at})
			if got := r.Summary.LatencyMS.Max; math.Abs(got-c.want) > 0.01 {
				t.Errorf("request at %v: latency %v ms, want %v", c.at, got, c.want)
			}
		}
	})
}
