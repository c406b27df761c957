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

// boundScript launches one b = 1 instance at its first step and a second at its second, and
// records what it sees; bound is its policy.QueueBounder answer.
type boundScript struct {
	bound bool
	views []policy.ClusterView
}

func (*boundScript) Name() string          { return "bound" }
func (p *boundScript) BoundedQueues() bool { return p.bound }

func (p *boundScript) Control(v policy.ClusterView, _ time.Time) (policy.ClusterDecision, error) {
	p.views = append(p.views, v)
	d := policy.ClusterDecision{}
	if len(p.views) <= 2 {
		d.Launch = []policy.InstanceLaunch{{Function: 0, Server: len(p.views) - 1, Resources: cluster.Resources{CPU: 2}, Batch: 1,
			Exec: 7 * time.Millisecond, Bounds: infless.Bounds{Up: 100}}}
	}
	return d, nil
}

// TestRunClusterBoundedQueues (issue #18 item 10, INFless Fig. 6(a)): five requests arrive at
// 0.99 s for one instance of 7 ms a request. With bounded queues the instance holds one in
// service and one queued; the other three wait at the function (policy.FunctionView.Waiting at the
// 1 s step: 2, one having gone to the instance as its first finished) and go to the instance
// launched at 1 s, so the last finishes at 1.014 s instead of 1.025 s behind the other four.
func TestRunClusterBoundedQueues(t *testing.T) {
	for _, tc := range []struct {
		bound       bool
		wantWaiting int
		wantMaxMS   float64
	}{{false, 0, 35}, {true, 2, 24}} {
		cfg := DefaultClusterConfig()
		cfg.Servers, cfg.StartDelay, cfg.NoiseCV = 2, 0, 0
		at := 990 * time.Millisecond
		arrivals := listArrivals{at, at, at, at, at}
		fns := []ClusterFunction{{Name: "toy", Profile: toyProfile(), SLO: slo.Spec{Threshold: 100 * time.Millisecond, Target: 0.95}, Arrivals: &arrivals}}
		p := &boundScript{bound: tc.bound}
		r, err := RunCluster(context.Background(), cfg, fns, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.views) < 2 {
			t.Fatalf("bound %v: %d steps", tc.bound, len(p.views))
		}
		if got := p.views[1].Functions[0].Waiting; got != tc.wantWaiting {
			t.Errorf("bound %v: waiting at 1 s = %d, want %d", tc.bound, got, tc.wantWaiting)
		}
		if s := r.Summary; s.Completed != 5 || math.Abs(s.LatencyMS.Max-tc.wantMaxMS) > 0.01 {
			t.Errorf("bound %v: completed %d, max latency %v ms; want 5 and %v", tc.bound, s.Completed, s.LatencyMS.Max, tc.wantMaxMS)
		}
	}
}
