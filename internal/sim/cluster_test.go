package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// INFlessVariant is one row of the INFless tables: the default policy, the uniform baseline, the
// Fig. 11 ablations of the default, Eq. 10 as printed (inflesspol.PaperOptions) and the default
// without lending (inflesspol.Options.Lend).
type inflessVariant struct {
	name string
	mk   func() (policy.Cluster, error)
}

func inflessVariants() []inflessVariant {
	abl := func(name string, edit func(*inflesspol.Options)) inflessVariant {
		return inflessVariant{name, func() (policy.Cluster, error) {
			o := inflesspol.DefaultOptions()
			edit(&o)
			return inflesspol.New(name, o)
		}}
	}
	return []inflessVariant{
		abl("infless", func(*inflesspol.Options) {}),
		{"uniform", func() (policy.Cluster, error) { return uniform.New(uniform.DefaultOptions()) }},
		abl("infless-BB", func(o *inflesspol.Options) { o.MaxBatch = 1 }),
		abl("infless-OP1.5", func(o *inflesspol.Options) { o.Offset = 0.5 }),
		abl("infless-OP2", func(o *inflesspol.Options) { o.Offset = 1.0 }),
		abl("infless-RS", func(o *inflesspol.Options) { o.FirstFit = true }),
		{"infless-Eq.10", func() (policy.Cluster, error) { return inflesspol.New("infless-Eq.10", inflesspol.PaperOptions()) }},
		abl("infless-nolend", func(o *inflesspol.Options) { o.Lend = false }),
		abl("infless-nospare", func(o *inflesspol.Options) { o.Spare = false }),
		abl("infless-Eq.1", func(o *inflesspol.Options) { o.QueueCap, o.BoundQueues, o.Backlog = false, false, false }),
	}
}

// TestINFlessTables prints docs/infless.md's tables: OSVT + Q&A on one cluster, driven by Azure
// fn2–fn4 (first 24 h) and by burst300-2..4 (1 h), every trace rescaled to a 100 rps peak.
// SLOSERVE_INFLESS=1 go test -count=1 -run TestINFlessTables -v ./internal/sim
func TestINFlessTables(t *testing.T) {
	if os.Getenv("SLOSERVE_INFLESS") == "" {
		t.Skip("long: set SLOSERVE_INFLESS=1")
	}
	data := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(data); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	tr := filepath.Join(data, "traces", "azure-functions")
	sets := []struct {
		name   string
		traces []string
		dur    time.Duration
	}{
		{"azure fn2-fn4 (24 h)", []string{"fn2.rpm.csv", "fn3.rpm.csv", "fn4.rpm.csv"}, 24 * time.Hour},
		{"burst300-2..4 (1 h)", []string{"burst300-2.csv", "burst300-3.csv", "burst300-4.csv"}, time.Hour},
	}
	for _, set := range sets {
		var paths []string
		for _, f := range set.traces {
			paths = append(paths, filepath.Join(tr, f))
		}
		t.Logf("%s", set.name)
		t.Logf("| policy | requests | SLO violations | rps/resource | vs uniform | fragment ratio | with spares, loans | rps/alloc. resource | mean instances | active servers | batch sizes launched |")
		t.Logf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
		type row struct {
			name string
			r    *ClusterResult
		}
		var rows []row
		var base float64
		for _, v := range inflessVariants() {
			fns, err := LoadWorkload(filepath.Join(data, "profiles", "infless"), paths, OSVTQA, WorkloadOptions{PeakRPS: 100, Duration: set.dur, SLOTarget: 0.95, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			p, err := v.mk()
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultClusterConfig()
			cfg.Trace = set.name
			r, err := RunCluster(context.Background(), cfg, fns, p)
			if err != nil {
				t.Fatal(err)
			}
			if v.name == "uniform" {
				base = r.Summary.Extra["rps_per_resource"]
			}
			rows = append(rows, row{v.name, r})
			if v.name == "infless" {
				for _, f := range r.Functions {
					t.Logf("  infless %-20s requests %8d violations %6.2f %% p99 %6.0f ms mean batch %.2f cold-start requests %d", f.Trace, f.Requests, 100*(1-f.SLOAttainment), f.LatencyMS.P99, f.MeanBatchSize, f.ColdStarts)
				}
			}
		}
		for _, rw := range rows {
			s := rw.r.Summary
			t.Logf("| %s | %d | %.2f %% | %.4f | %.2f× | %.1f %% | %.1f %% | %.3f | %.1f | %.1f | %v |", rw.name, s.Requests, 100*(1-s.SLOAttainment),
				s.Extra["rps_per_resource"], s.Extra["rps_per_resource"]/max(base, 1e-12), 100*s.Extra["fragment_ratio"], 100*s.Extra["fragment_ratio_filled"], s.Extra["rps_per_alloc_resource"],
				s.Extra["mean_instances"], s.Extra["mean_active_servers"], rw.r.BatchInstances)
		}
		res := map[string]*ClusterResult{}
		var order []string
		for _, rw := range rows {
			res[rw.name] = rw.r
			order = append(order, rw.name)
		}
		logPerFunction(t, order, res)
	}
}
