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

// preemptScript launches two toy instances (servers 0 and 1) at the first step and preempts the
// first at the 1 s step.
type preemptScript struct{ views []policy.ClusterView }

func (*preemptScript) Name() string { return "preempt-script" }

func (p *preemptScript) Control(v policy.ClusterView, now time.Time) (policy.ClusterDecision, error) {
	p.views = append(p.views, v)
	var d policy.ClusterDecision
	switch now.Sub(DefaultEpoch) {
	case 0:
		for s := range 2 {
			d.Launch = append(d.Launch, policy.InstanceLaunch{Function: 0, Server: s, Resources: cluster.Resources{CPU: 2}, Batch: 1, Bounds: infless.Bounds{Up: 100}, Spare: s == 0})
		}
	case time.Second:
		d.Preempt = []int{0}
	}
	return d, nil
}

// TestRunClusterPreempt: a preempted instance frees its resources at once, and the requests in
// its batch in flight and in its queue are served by the function's other instance from scratch,
// with their original arrival times (toy: 7 ms a request on 2 threads); none is lost.
func TestRunClusterPreempt(t *testing.T) {
	cfg := DefaultClusterConfig()
	cfg.Servers, cfg.StartDelay, cfg.NoiseCV = 2, 0, 0
	p := &preemptScript{}
	// Equal weights, least assigned first: 0.996 s → instance 0 (in flight at 1 s, 3 of 7 ms
	// left), 0.997 s → instance 1, 0.998 s → instance 0 (queued).
	arrivals := listArrivals{996 * time.Millisecond, 997 * time.Millisecond, 998 * time.Millisecond}
	fns := []ClusterFunction{{Name: "toy", Profile: toyProfile(), SLO: slo.Spec{Threshold: 100 * time.Millisecond, Target: 0.95}, Arrivals: &arrivals}}
	r, err := RunCluster(context.Background(), cfg, fns, p)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	// Instance 1: 0.997 s done at 1.004 s (7 ms), then 0.996 s at 1.011 s (15 ms), then 0.998 s at
	// 1.018 s (20 ms).
	if s.Requests != 3 || s.Completed != 3 || math.Abs(s.LatencyMS.Max-20) > 0.01 || math.Abs(s.LatencyMS.P50-15) > 0.1 {
		t.Errorf("requests %d completed %d latency p50 %v max %v ms; want 3, 3, 15, 20", s.Requests, s.Completed, s.LatencyMS.P50, s.LatencyMS.Max)
	}
	if s.Extra["preemptions"] != 1 || s.Extra["releases"] != 1 {
		t.Errorf("preemptions %v releases %v, want 1 and 1", s.Extra["preemptions"], s.Extra["releases"])
	}
	if len(p.views) < 3 {
		t.Fatalf("%d control steps, want ≥ 3", len(p.views))
	}
	v := p.views[2] // the step after the preemption
	if got := v.Cluster.Used(0); !got.IsZero() {
		t.Errorf("server 0 still holds %+v after the preemption", got)
	}
	if ins := v.Functions[0].Instances; len(ins) != 1 || ins[0].ID != 1 || ins[0].Launch.Spare {
		t.Errorf("instances after the preemption: %+v, want only instance 1", ins)
	}
	if ins := p.views[1].Functions[0].Instances; len(ins) != 2 || !ins[0].Launch.Spare {
		t.Errorf("instances before the preemption: %+v, want two, the first marked spare", ins)
	}
}
