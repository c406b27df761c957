package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// fillPolicy launches, at its first step, one own instance of 4 threads + 20 % GPU, one spare of
// 2 threads + 10 % GPU on the same server, and lends the own instance 8 threads + 40 % GPU.
type fillPolicy struct{ step int }

func (*fillPolicy) Name() string { return "fill" }

func (p *fillPolicy) Control(v policy.ClusterView, _ time.Time) (policy.ClusterDecision, error) {
	p.step++
	d := policy.ClusterDecision{}
	if p.step == 1 {
		d.Launch = []policy.InstanceLaunch{
			{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 4, GPU: 20}, Batch: 1, Timeout: 0, Exec: 10 * time.Millisecond, Bounds: infless.Bounds{Up: 100}},
			{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 2, GPU: 10}, Batch: 1, Exec: 10 * time.Millisecond, Bounds: infless.Bounds{Up: 100}, Spare: true},
		}
		return d, nil
	}
	d.Lend = map[int]cluster.Resources{}
	for _, in := range v.Functions[0].Instances {
		if !in.Launch.Spare {
			d.Lend[in.ID] = cluster.Resources{CPU: 8, GPU: 40}
		}
	}
	return d, nil
}

// TestFragmentRatioWithoutFill is issue #18 item 12: spares and loans fill free space with extra
// instances and extra resources, so §5.3's fragment_ratio counts them as free (what the
// functions' own instances hold at their launch configuration is the allocation) and
// fragment_ratio_filled as allocated. One server of 16 threads + 100 % GPU holds an own instance
// of 4 + 20 % (lent 8 + 40 % from the second step on) and a spare of 2 + 10 %.
func TestFragmentRatioWithoutFill(t *testing.T) {
	cfg := DefaultClusterConfig()
	cfg.Servers, cfg.NoiseCV = 2, 0
	arr := trace.Until(trace.Poisson(5, 1), 20*time.Second)
	prof := profile.INFlessProfile{Model: "fill"}
	for _, r := range []cluster.Resources{{CPU: 2, GPU: 10}, {CPU: 4, GPU: 20}, {CPU: 8, GPU: 40}} {
		prof.Points = append(prof.Points, profile.INFlessPoint{CPU: r.CPU, GPU: r.GPU, Batch: 1, Latency: 10 * time.Millisecond})
	}
	fns := []ClusterFunction{{Name: "fill", Profile: prof, SLO: slo.Spec{Threshold: 100 * time.Millisecond, Target: 0.95}, Arrivals: arr}}
	r, err := RunCluster(context.Background(), cfg, fns, &fillPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	x := r.Summary.Extra
	own := 1 - cluster.Resources{CPU: 4, GPU: 20}.Weighted(cluster.DefaultBeta)/cluster.DefaultServer.Weighted(cluster.DefaultBeta)
	if math.Abs(x["fragment_ratio"]-own) > 1e-6 {
		t.Errorf("fragment_ratio %.6f, want %.6f (only the own instance's launch configuration allocated)", x["fragment_ratio"], own)
	}
	if !(x["fragment_ratio_filled"] < own-0.05) {
		t.Errorf("fragment_ratio_filled %.6f, want well below %.6f (spare and loan allocated)", x["fragment_ratio_filled"], own)
	}
	if math.Abs(x["fragment_cpu"]-12.0/16) > 1e-6 || math.Abs(x["fragment_gpu"]-0.8) > 1e-6 {
		t.Errorf("fragment_cpu %.4f, fragment_gpu %.4f; want 0.75 and 0.8", x["fragment_cpu"], x["fragment_gpu"])
	}
}
