package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	"github.com/sloserve/sloserve/internal/policy/uniform"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// toyProfile is a model whose batch of b takes 5 + 2b ms on 2 CPU threads and (5 + 2b)/2 ms with
// 2 threads and 20 % of a GPU.
func toyProfile() profile.INFlessProfile {
	p := profile.INFlessProfile{Model: "toy"}
	for _, b := range []int{1, 2, 4, 8, 16, 32} {
		t := time.Duration(5+2*b) * time.Millisecond
		p.Points = append(p.Points, profile.INFlessPoint{CPU: 2, Batch: b, Latency: t}, profile.INFlessPoint{CPU: 2, GPU: 20, Batch: b, Latency: t / 2})
	}
	return p
}

func toyFunctions(rate float64, n int, seed uint64) []ClusterFunction {
	var out []ClusterFunction
	for i := range n {
		out = append(out, ClusterFunction{Name: fmt.Sprintf("toy%d", i), Profile: toyProfile(), SLO: slo.Spec{Threshold: 100 * time.Millisecond, Target: 0.95},
			Arrivals: trace.Until(trace.Poisson(rate*float64(i+1), seed+uint64(i)), 2*time.Minute), MeanRPS: rate * float64(i+1)})
	}
	return out
}

func TestRunClusterAccountingAndDeterminism(t *testing.T) {
	pols := map[string]func() policy.Cluster{
		"infless": func() policy.Cluster { p, _ := inflesspol.New("", inflesspol.DefaultOptions()); return p },
		"uniform": func() policy.Cluster { p, _ := uniform.New(uniform.DefaultOptions()); return p },
	}
	for name, mk := range pols {
		t.Run(name, func(t *testing.T) {
			run := func() *ClusterResult {
				t.Helper()
				cfg := DefaultClusterConfig()
				cfg.Servers = 8
				r, err := RunCluster(context.Background(), cfg, toyFunctions(100, 2, 3), mk())
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			a, b := run(), run()
			s := a.Summary
			var n int64
			for _, f := range a.Functions {
				n += f.Requests
				if f.Completed+f.Failed+f.Rejected != f.Requests {
					t.Errorf("%s: completed %d + failed %d + rejected %d != %d", f.Policy, f.Completed, f.Failed, f.Rejected, f.Requests)
				}
			}
			if s.Requests != n || s.Requests < 30000 {
				t.Errorf("aggregate requests %d, functions %d; want the same and ≈ 36,000", s.Requests, n)
			}
			if s.SLOAttainment < 0.95 {
				t.Errorf("attainment %.4f < 0.95 on a steady Poisson load", s.SLOAttainment)
			}
			if f := s.Extra["fragment_ratio"]; !(f >= 0 && f < 1) || s.Extra["rps_per_resource"] <= 0 {
				t.Errorf("fragment_ratio %v, rps_per_resource %v", f, s.Extra["rps_per_resource"])
			}
			if a.Summary.SLOAttainment != b.Summary.SLOAttainment || a.Summary.Extra["rps_per_resource"] != b.Summary.Extra["rps_per_resource"] {
				t.Errorf("same seed, different results:\n-%+v\n+%+v", a.Summary, b.Summary)
			}
		})
	}
}

// TestINFlessClusterNonUniform: at 1000 rps a toy function gets large-batch instances for the bulk
// of its load (Alg. 1, largest batch first) and the residual on smaller ones.
func TestINFlessClusterNonUniform(t *testing.T) {
	p, err := inflesspol.New("", inflesspol.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultClusterConfig()
	cfg.Servers = 8
	r, err := RunCluster(context.Background(), cfg, toyFunctions(1000, 1, 5), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.BatchInstances) < 2 {
		t.Errorf("instances by batch size %v: want several batch sizes (non-uniform)", r.BatchInstances)
	}
	if r.Summary.MeanBatchSize <= 2 {
		t.Errorf("mean batch %.2f: want batching at 1000 rps", r.Summary.MeanBatchSize)
	}
}

func TestClusterConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*ClusterConfig)
	}{
		{"servers", func(c *ClusterConfig) { c.Servers = 0 }},
		{"server", func(c *ClusterConfig) { c.Server.CPU, c.Server.GPU = 0, 0 }},
		{"control period", func(c *ClusterConfig) { c.ControlPeriod = 0 }},
		{"rate window", func(c *ClusterConfig) { c.RateWindow = time.Millisecond }},
		{"noise", func(c *ClusterConfig) { c.NoiseCV = 3 }},
		{"timeout", func(c *ClusterConfig) { c.RequestTimeout = 0 }},
	}
	if err := DefaultClusterConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultClusterConfig()
			tc.edit(&c)
			if err := c.Validate(); err == nil {
				t.Errorf("Validate accepted a bad %s", tc.name)
			}
		})
	}
}
