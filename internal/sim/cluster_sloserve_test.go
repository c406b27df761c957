package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	slopol "github.com/sloserve/sloserve/internal/policy/sloserve"
	"github.com/sloserve/sloserve/internal/profile"
)

// cpuGPUProfile is a function whose CPU-only instance (2 threads, 20 ms, r_up 50/s) is the most
// efficient per FLOPS at INFless's β = 64/142, while its GPU instance (2 threads + 20 % SMs,
// 4 ms, r_up 250/s) does 5× the work per instance: Eq. 10 at INFless's β fills servers' threads
// with CPU-only instances, at β = G/C it takes the GPU ones.
func cpuGPUProfile() profile.INFlessProfile {
	return profile.INFlessProfile{Model: "cg", Points: []profile.INFlessPoint{
		{CPU: 2, GPU: 0, Batch: 1, Latency: 20 * time.Millisecond},
		{CPU: 2, GPU: 20, Batch: 1, Latency: 4 * time.Millisecond},
	}}
}

// TestSloserveClusterPlacementChoice: at 600 req/s the INFless pricing needs 12 CPU-only
// instances (24 threads: two servers), the β = G/C pricing 3 GPU ones (one server); sloserve
// keeps the decision with fewer active servers and says which pricing made it.
func TestSloserveClusterPlacementChoice(t *testing.T) {
	fv := policy.FunctionView{Index: 0, Name: "cg", Profile: cpuGPUProfile(), SLO: 100 * time.Millisecond, Rate: 600, RateNow: 600}
	tests := []struct {
		name       string
		pricings   []slopol.ClusterPricing
		wantActive int
		wantLabel  string
	}{
		{"infless only", nil, 2, "Eq. 10 at the run's β"},
		{"with β = G/C", []slopol.ClusterPricing{slopol.GCPricing}, 1, "Eq. 10 at β=6.25"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := slopol.DefaultClusterOptions()
			o.INFless = inflesspol.PaperOptions() // Eq. 10 as printed, INFless's β
			o.Pricings = tc.pricings
			pol, err := slopol.NewCluster(o)
			if err != nil {
				t.Fatal(err)
			}
			c := cluster.New(4, cluster.DefaultServer)
			d, err := pol.Control(policy.ClusterView{Cluster: c, Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{fv}}, DefaultEpoch)
			if err != nil {
				t.Fatal(err)
			}
			after := c.Clone()
			var up float64
			for _, l := range d.Launch {
				if err := after.Place(l.Server, l.Resources); err != nil {
					t.Fatal(err)
				}
				up += l.Bounds.Up
			}
			if got := after.ActiveServers(); got != tc.wantActive {
				t.Errorf("active servers after the decision = %d, want %d (launches %+v)", got, tc.wantActive, d.Launch)
			}
			if up < 600 {
				t.Errorf("launched r_up %.0f < R = 600", up)
			}
			if len(d.Reasons) != len(d.Launch) || len(d.Reasons) == 0 {
				t.Fatalf("reasons %q for %d launches: want one per launch", d.Reasons, len(d.Launch))
			}
			for _, r := range d.Reasons {
				if !strings.HasPrefix(r, "infless: Alg. 1") || !strings.Contains(r, "sloserve: placement by "+tc.wantLabel) {
					t.Errorf("reason %q: want INFless's Alg. 1 and sloserve's placement by %s", r, tc.wantLabel)
				}
			}
			if c.ActiveServers() != 0 {
				t.Errorf("Control changed the view's cluster")
			}
		})
	}
}

func TestSloserveClusterOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*slopol.ClusterOptions)
	}{
		{"guard 0", func(o *slopol.ClusterOptions) { o.Guard = 0 }},
		{"guard > 1", func(o *slopol.ClusterOptions) { o.Guard = 1.2 }},
		{"headroom < 1", func(o *slopol.ClusterOptions) { o.Headroom = 0.9 }},
		{"negative β", func(o *slopol.ClusterOptions) { o.Pricings = []slopol.ClusterPricing{{Beta: -1}} }},
		{"infless", func(o *slopol.ClusterOptions) { o.INFless.Alpha = 2 }},
	}
	if err := slopol.DefaultClusterOptions().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := slopol.DefaultClusterOptions()
			tc.edit(&o)
			if _, err := slopol.NewCluster(o); err == nil {
				t.Errorf("accepted a bad %s", tc.name)
			}
		})
	}
}

// TestSloserveClusterReleases: releases are INFless's (α-band case iii held ScaleDownAfter, then
// infless.Release), each with a reason naming it.
func TestSloserveClusterReleases(t *testing.T) {
	pol, err := slopol.NewCluster(slopol.DefaultClusterOptions())
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.New(2, cluster.DefaultServer)
	var ins []policy.InstanceView
	for id := range 3 {
		l := policy.InstanceLaunch{Server: 0, Resources: cluster.Resources{CPU: 2}, Batch: 1, Exec: 20 * time.Millisecond}
		l.Bounds.Up = 50
		if err := c.Place(0, l.Resources); err != nil {
			t.Fatal(err)
		}
		ins = append(ins, policy.InstanceView{ID: id, Launch: l, Ready: true})
	}
	fv := policy.FunctionView{Index: 0, Name: "cg", Profile: cpuGPUProfile(), SLO: 100 * time.Millisecond, Rate: 10, RateNow: 10, Arrivals: 1, Instances: ins}
	steps := []struct {
		at          time.Duration
		wantRelease int
	}{
		{0, 0},                // below the band: the hold starts
		{10 * time.Second, 0}, // still held
		{31 * time.Second, 2}, // held 30 s: release all but what covers R
	}
	for _, st := range steps {
		d, err := pol.Control(policy.ClusterView{Cluster: c.Clone(), Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{fv}}, DefaultEpoch.Add(st.at))
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Release) != st.wantRelease || len(d.Launch) != 0 {
			t.Fatalf("at %v: released %v, launched %d; want %d releases, no launch", st.at, d.Release, len(d.Launch), st.wantRelease)
		}
		if len(d.Reasons) != st.wantRelease {
			t.Fatalf("at %v: reasons %q", st.at, d.Reasons)
		}
		for _, r := range d.Reasons {
			if !strings.HasPrefix(r, "infless: release instance") || !strings.Contains(r, " of cg ") {
				t.Errorf("reason %q: want INFless's release of cg", r)
			}
		}
	}
}

// TestSloserveClusterToyRun: on steady toy functions sloserve meets the SLO with no more active
// servers than infless, and every request is accounted for.
func TestSloserveClusterToyRun(t *testing.T) {
	run := func(p policy.Cluster) *ClusterResult {
		t.Helper()
		cfg := DefaultClusterConfig()
		cfg.Servers = 8
		r, err := RunCluster(context.Background(), cfg, toyFunctions(100, 2, 3), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	s, err := slopol.NewCluster(slopol.DefaultClusterOptions())
	if err != nil {
		t.Fatal(err)
	}
	i, err := inflesspol.New("", inflesspol.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	rs, ri := run(s), run(i)
	if rs.Summary.Requests != ri.Summary.Requests || rs.Summary.Completed+rs.Summary.Failed != rs.Summary.Requests {
		t.Fatalf("requests %d / %d, completed %d failed %d", rs.Summary.Requests, ri.Summary.Requests, rs.Summary.Completed, rs.Summary.Failed)
	}
	if rs.Summary.SLOAttainment < 0.95 {
		t.Errorf("sloserve attainment %.4f < 0.95 on a steady load", rs.Summary.SLOAttainment)
	}
	if rs.Summary.Extra["mean_active_servers"] > ri.Summary.Extra["mean_active_servers"]+1e-9 {
		t.Errorf("sloserve holds %.2f active servers, infless %.2f", rs.Summary.Extra["mean_active_servers"], ri.Summary.Extra["mean_active_servers"])
	}
}

// TestSloserveINFlessSetting is issue 11's acceptance on INFless's benchmark (OSVT + Q&A,
// burst300-2..4, busy cluster; docs/scoreboard.md): at 100, 400 and 1,600 rps per function
// sloserve holds no more active servers than infless (at 100 rps: at most 3 % more), at equal or
// better SLO attainment, with every function at its target. Without ../shared/data it runs on
// testdata/fixture, whose made-up profiles leave one function short of its target at 400 rps under
// both policies (by 0.038): there sloserve's worst function must do as well as infless's instead.
func TestSloserveINFlessSetting(t *testing.T) {
	data := dataDir(t)
	onShared := data == sharedData
	var paths []string
	for _, f := range []string{"burst300-2.csv", "burst300-3.csv", "burst300-4.csv"} {
		paths = append(paths, filepath.Join(data, "traces", "azure-functions", f))
	}
	peaks := []float64{100, 400}
	if os.Getenv("SLOSERVE_LONG") != "" {
		peaks = append(peaks, 1600)
	}
	for _, peak := range peaks {
		res := map[string]*ClusterResult{}
		for _, name := range []string{"infless", "sloserve"} {
			fns, err := LoadWorkload(filepath.Join(data, "profiles", "infless"), paths, OSVTQA, WorkloadOptions{PeakRPS: peak, Duration: 15 * time.Minute, SLOTarget: 0.95, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewClusterPolicy(name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultClusterConfig()
			cfg.Servers = BusyClusterServers
			if res[name], err = RunCluster(context.Background(), cfg, fns, p); err != nil {
				t.Fatal(err)
			}
		}
		s, i := res["sloserve"].Summary, res["infless"].Summary
		for _, name := range []string{"sloserve", "infless"} {
			if m := res[name].Summary.Extra["per_function.worst_margin"]; m < 0 && onShared {
				t.Errorf("peak %.0f: %s: a function misses its target by %.4f", peak, name, -m)
			}
		}
		if ms, mi := s.Extra["per_function.worst_margin"], i.Extra["per_function.worst_margin"]; !onShared && ms < min(mi, 0)-1e-3 {
			t.Errorf("peak %.0f: sloserve's worst function misses its target by %.4f, infless's by %.4f", peak, -ms, -mi)
		}
		t.Logf("peak %.0f: sloserve %.2f %% attained, %.2f active servers, %.4f rps/resource; infless %.2f %%, %.2f, %.4f", peak,
			100*s.SLOAttainment, s.Extra["mean_active_servers"], s.Extra["rps_per_resource"], 100*i.SLOAttainment, i.Extra["mean_active_servers"], i.Extra["rps_per_resource"])
		// Equal attainment is to 0.01 percentage points (a few requests in 10⁵: on the fixture's made-up
		// profiles the two place alike and differ by 2 requests).
		if s.SLOAttainment < i.SLOAttainment-1e-4 {
			t.Errorf("peak %.0f: sloserve attainment %.6f < infless %.6f", peak, s.SLOAttainment, i.SLOAttainment)
		}
		// Equal servers (to 0.1 %: the time integrals differ in the last digits) count as cheap enough;
		// so do completed requests per resource. At 100 rps sloserve may hold up to 3 % more: its
		// 200 ms burst drain (SloserveBurstDrain), which keeps ssd within its target at 1,600 rps
		// under the ±10 % prediction error, holds 2.77 servers there against infless's 2.70.
		tol := 1e-3
		if peak == 100 {
			tol = 0.03
		}
		if s.Extra["mean_active_servers"] > i.Extra["mean_active_servers"]*(1+tol) || s.Extra["rps_per_resource"] < i.Extra["rps_per_resource"]*(1-tol) {
			t.Errorf("peak %.0f: sloserve not cheaper: %.2f active servers (%.4f rps/resource) against infless's %.2f (%.4f)", peak,
				s.Extra["mean_active_servers"], s.Extra["rps_per_resource"], i.Extra["mean_active_servers"], i.Extra["rps_per_resource"])
		}
	}
}

func TestClusterPolicyRegistry(t *testing.T) {
	for _, n := range ClusterPolicyNames() {
		p, err := NewClusterPolicy(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if p.Name() != n {
			t.Errorf("NewClusterPolicy(%q).Name() = %q", n, p.Name())
		}
	}
	if _, err := NewClusterPolicy("nope"); err == nil {
		t.Error("unknown policy accepted")
	}
}
