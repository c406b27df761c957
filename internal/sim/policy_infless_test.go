package sim

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/planner/infless"
)

// TestINFlessDefragmentMoves drives the INFless policy through one defragmentation: a function
// with an instance on a nearly full server and one alone on another server, its load inside the
// α-band. The first step relaunches the lone instance's configuration on the full server; the
// step after the new instance is ready releases the old one. Without Defragment nothing moves.
func TestINFlessDefragmentMoves(t *testing.T) {
	big := InstanceLaunch{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 12, GPU: 80}, Batch: 1, Bounds: infless.Bounds{Up: 100}}
	lone := InstanceLaunch{Function: 0, Server: 1, Resources: cluster.Resources{CPU: 2, GPU: 10}, Batch: 1, Bounds: infless.Bounds{Up: 100}}
	view := func(ins ...InstanceView) ClusterView {
		c := cluster.New(4, DefaultServer)
		for _, in := range ins {
			if err := c.Place(in.Launch.Server, in.Launch.Resources); err != nil {
				t.Fatal(err)
			}
		}
		// 180 rps over R_max 200, R_min 0: inside the band (≥ 160) with two instances.
		fv := FunctionView{Index: 0, Name: "toy", Profile: toyProfile(), SLO: 100 * time.Millisecond, Rate: 180, RateNow: 180, Arrivals: 1000, Instances: ins}
		return ClusterView{Cluster: c, Beta: cluster.DefaultBeta, Functions: []FunctionView{fv}}
	}
	t0 := DefaultEpoch
	for _, tc := range []struct {
		name       string
		defragment bool
		wantLaunch []InstanceLaunch
		wantRel    []int
	}{
		{"defragment", true, []InstanceLaunch{{Function: 0, Server: 0, Resources: lone.Resources, Batch: 1, Bounds: lone.Bounds}}, []int{2}},
		{"off", false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultINFlessOptions()
			o.Defragment = tc.defragment
			p, err := NewINFlessCluster("", o)
			if err != nil {
				t.Fatal(err)
			}
			d, err := p.Control(view(InstanceView{ID: 1, Launch: big, Ready: true}, InstanceView{ID: 2, Launch: lone, Ready: true}), t0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Launch, tc.wantLaunch) || len(d.Release) != 0 {
				t.Fatalf("step 1: launch %+v release %v; want launch %+v, no release", d.Launch, d.Release, tc.wantLaunch)
			}
			if len(d.Launch) == 0 {
				return
			}
			moved := InstanceView{ID: 3, Launch: d.Launch[0]}
			// Still starting: the old instance keeps serving.
			d, err = p.Control(view(InstanceView{ID: 1, Launch: big, Ready: true}, InstanceView{ID: 2, Launch: lone, Ready: true}, moved), t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Release) != 0 || len(d.Launch) != 0 {
				t.Fatalf("step 2 (new instance starting): launch %+v release %v; want nothing", d.Launch, d.Release)
			}
			moved.Ready = true
			d, err = p.Control(view(InstanceView{ID: 1, Launch: big, Ready: true}, InstanceView{ID: 2, Launch: lone, Ready: true}, moved), t0.Add(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Release, tc.wantRel) || len(d.Launch) != 0 {
				t.Errorf("step 3 (new instance ready): launch %+v release %v; want release %v", d.Launch, d.Release, tc.wantRel)
			}
		})
	}
}

// TestLoadWorkloadWindow: From and Duration cut the window of the traces the busy-cluster
// evaluation replays (Azure fn2–fn4 from hour 12), still rescaled by the whole trace's peak.
func TestLoadWorkloadWindow(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("toy-profile-results.txt", "toy 2 0 1 10\n")
	tr := write("t.csv", "step,rps\n0,100\n1,10\n2,20\n3,30\n")
	for _, tc := range []struct {
		name      string
		from, dur time.Duration
		wantMean  float64
	}{
		{"whole", 0, 0, 20}, // (100+10+20+30)/4 × peak 50/100
		{"from 1 s", time.Second, 0, 10},
		{"from 1 s for 2 s", time.Second, 2 * time.Second, 7.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fns, err := LoadWorkload(dir, []string{tr}, []WorkloadFunction{{"toy", 50 * time.Millisecond, 0}}, WorkloadOptions{PeakRPS: 50, From: tc.from, Duration: tc.dur, SLOTarget: 0.95, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got := fns[0].MeanRPS; math.Abs(got-tc.wantMean) > 1e-9 {
				t.Errorf("mean rate %v, want %v", got, tc.wantMean)
			}
		})
	}
	if _, err := LoadWorkload(dir, []string{tr}, []WorkloadFunction{{"toy", 50 * time.Millisecond, 0}}, WorkloadOptions{From: -time.Second, SLOTarget: 0.95}); err == nil {
		t.Error("LoadWorkload accepted a negative From")
	}
}
