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
	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
)

// TestINFlessDefragmentMoves drives the INFless policy through one defragmentation: a function
// with an instance on a nearly full server and one alone on another server, its load inside the
// α-band. The first step relaunches the lone instance's configuration on the full server; the
// step after the new instance is ready releases the old one. Without Defragment nothing moves.
func TestINFlessDefragmentMoves(t *testing.T) {
	big := policy.InstanceLaunch{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 12, GPU: 80}, Batch: 1, Bounds: infless.Bounds{Up: 100}}
	lone := policy.InstanceLaunch{Function: 0, Server: 1, Resources: cluster.Resources{CPU: 2, GPU: 10}, Batch: 1, Bounds: infless.Bounds{Up: 100}}
	view := func(ins ...policy.InstanceView) policy.ClusterView {
		c := cluster.New(4, cluster.DefaultServer)
		for _, in := range ins {
			if err := c.Place(in.Launch.Server, in.Launch.Resources); err != nil {
				t.Fatal(err)
			}
		}
		// 180 rps over R_max 200, R_min 0: inside the band (≥ 160) with two instances.
		fv := policy.FunctionView{Index: 0, Name: "toy", Profile: toyProfile(), SLO: 100 * time.Millisecond, Rate: 180, RateNow: 180, Arrivals: 1000, Instances: ins}
		return policy.ClusterView{Cluster: c, Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{fv}}
	}
	t0 := DefaultEpoch
	for _, tc := range []struct {
		name       string
		defragment bool
		wantLaunch []policy.InstanceLaunch
		wantRel    []int
	}{
		{"defragment", true, []policy.InstanceLaunch{{Function: 0, Server: 0, Resources: lone.Resources, Batch: 1, Bounds: lone.Bounds}}, []int{2}},
		{"off", false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := inflesspol.DefaultOptions()
			o.Defragment, o.Spare = tc.defragment, false // spares: TestINFlessSpare
			p, err := inflesspol.New("", o)
			if err != nil {
				t.Fatal(err)
			}
			d, err := p.Control(view(policy.InstanceView{ID: 1, Launch: big, Ready: true}, policy.InstanceView{ID: 2, Launch: lone, Ready: true}), t0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Launch, tc.wantLaunch) || len(d.Release) != 0 {
				t.Fatalf("step 1: launch %+v release %v; want launch %+v, no release", d.Launch, d.Release, tc.wantLaunch)
			}
			if len(d.Launch) == 0 {
				return
			}
			moved := policy.InstanceView{ID: 3, Launch: d.Launch[0]}
			// Still starting: the old instance keeps serving.
			d, err = p.Control(view(policy.InstanceView{ID: 1, Launch: big, Ready: true}, policy.InstanceView{ID: 2, Launch: lone, Ready: true}, moved), t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Release) != 0 || len(d.Launch) != 0 {
				t.Fatalf("step 2 (new instance starting): launch %+v release %v; want nothing", d.Launch, d.Release)
			}
			moved.Ready = true
			d, err = p.Control(view(policy.InstanceView{ID: 1, Launch: big, Ready: true}, policy.InstanceView{ID: 2, Launch: lone, Ready: true}, moved), t0.Add(2*time.Second))
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

// TestINFlessLend: with Lend, a server's free resources go to the instance on it that runs
// faster with them (toy: 2 threads → 2 threads + 20 % GPU), and a scale-up decides on the
// cluster without lending — the same launches, releases and weights as without Lend on the
// un-lent cluster — then lends only what the launches left.
func TestINFlessLend(t *testing.T) {
	filler := policy.InstanceLaunch{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 12, GPU: 80}, Batch: 1, Bounds: infless.Bounds{Low: 50, Up: 100}}
	lender := policy.InstanceLaunch{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 2}, Batch: 1, Bounds: infless.Bounds{Low: 50, Up: 100}}
	lentTo := cluster.Resources{CPU: 2, GPU: 20}
	view := func(rate float64, lent bool) policy.ClusterView {
		c := cluster.New(4, cluster.DefaultServer)
		ins := []policy.InstanceView{{ID: 1, Launch: filler, Ready: true, Resources: filler.Resources}, {ID: 2, Launch: lender, Ready: true, Resources: lender.Resources}}
		if lent {
			ins[1].Resources = lentTo
		}
		for _, in := range ins {
			if err := c.Place(in.Launch.Server, in.Resources); err != nil {
				t.Fatal(err)
			}
		}
		fv := policy.FunctionView{Index: 0, Name: "toy", Profile: toyProfile(), SLO: 100 * time.Millisecond, Rate: rate, RateNow: rate, Arrivals: 1000, Instances: ins}
		return policy.ClusterView{Cluster: c, Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{fv}}
	}
	policy := func(lend bool) policy.Cluster {
		o := inflesspol.DefaultOptions()
		o.Lend, o.Spare = lend, false // spares: TestINFlessSpare
		p, err := inflesspol.New("", o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t0 := DefaultEpoch

	// Inside the band: nothing launched, the free 2 threads + 20 % go to the lender.
	d, err := policy(true).Control(view(180, false), t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Launch) != 0 || len(d.Release) != 0 || len(d.Lend) != 1 || d.Lend[2] != lentTo {
		t.Fatalf("steady: launch %+v release %v lend %v; want only lend {2: %+v}", d.Launch, d.Release, d.Lend, lentTo)
	}
	if off, _ := policy(false).Control(view(180, false), t0); off.Lend != nil {
		t.Errorf("Lend off: lend %v, want nil", off.Lend)
	}

	// A burst while lent: the same decision as without Lend on the un-lent cluster.
	d, err = policy(true).Control(view(400, true), t0)
	if err != nil {
		t.Fatal(err)
	}
	off, err := policy(false).Control(view(400, false), t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Launch) == 0 || !slices.Equal(d.Launch, off.Launch) || !slices.Equal(d.Release, off.Release) || len(d.Weights) != len(off.Weights) || d.Weights[1] != off.Weights[1] || d.Weights[2] != off.Weights[2] {
		t.Fatalf("burst: launch %+v release %v weights %v; Lend off on the un-lent cluster: launch %+v release %v weights %v",
			d.Launch, d.Release, d.Weights, off.Launch, off.Release, off.Weights)
	}
	// Alg. 1 fills server 0's un-lent room (2 threads + 20 %), so the lender returns to its launch
	// configuration.
	if d.Launch[0].Server != 0 || len(d.Lend) != 0 {
		t.Errorf("burst: first launch on server %d, lend %v; want server 0 (the lent share taken back) and no lending", d.Launch[0].Server, d.Lend)
	}
	// What is held per server after the decision fits.
	used := map[int]cluster.Resources{0: filler.Resources.Add(lender.Resources)}
	for _, l := range d.Launch {
		used[l.Server] = used[l.Server].Add(l.Resources)
	}
	for id, r := range d.Lend {
		if id != 2 {
			t.Fatalf("lend to instance %d, want only the lender (2)", id)
		}
		used[0] = used[0].Add(r.Sub(lender.Resources))
	}
	for s, u := range used {
		if !cluster.DefaultServer.Fits(u) {
			t.Errorf("server %d holds %+v after the decision, more than %+v", s, u, cluster.DefaultServer)
		}
	}
}

// TestINFlessSpare drives the spares (inflesspol.Options.Spare, infless.Spares) through their life: a
// loaded function on a partly used server gets a spare in its free resources (never on an idle
// server); the spare stays and shares R by the α-band's split; a burst whose Alg. 1 launch needs
// the spare's room preempts it; a function that goes idle drains it.
func TestINFlessSpare(t *testing.T) {
	// Toy b = 1 options (+10 %): 2 threads 7.7 ms (r_up 129/s), 2 threads + 20 % 3.85 ms (259/s).
	filler := policy.InstanceLaunch{Function: 0, Server: 0, Resources: cluster.Resources{CPU: 12, GPU: 80}, Batch: 1, Bounds: infless.Bounds{Up: 300}}
	view := func(rate float64, ins ...policy.InstanceView) policy.ClusterView {
		c := cluster.New(4, cluster.DefaultServer)
		for _, in := range ins {
			if err := c.Place(in.Launch.Server, in.Launch.Resources); err != nil {
				t.Fatal(err)
			}
		}
		fv := policy.FunctionView{Index: 0, Name: "toy", Profile: toyProfile(), SLO: 100 * time.Millisecond, Rate: rate, RateNow: rate, Arrivals: 1000, Instances: ins}
		return policy.ClusterView{Cluster: c, Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{fv}}
	}
	o := inflesspol.DefaultOptions()
	o.Lend = false // what is left after the spare: TestINFlessLend
	p, err := inflesspol.New("", o)
	if err != nil {
		t.Fatal(err)
	}
	t0 := DefaultEpoch
	core := policy.InstanceView{ID: 1, Launch: filler, Ready: true, Resources: filler.Resources}

	// 280 rps on r_up 300 (inside the band, utilisation 0.93): the fastest spare within the
	// function's own capacity (259/s ≤ 300) in server 0's free 4 threads + 20 %.
	d, err := p.Control(view(280, core), t0)
	if err != nil {
		t.Fatal(err)
	}
	want := cluster.Resources{CPU: 2, GPU: 20}
	if len(d.Launch) != 1 || !d.Launch[0].Spare || d.Launch[0].Server != 0 || d.Launch[0].Resources != want || len(d.Release)+len(d.Preempt) != 0 {
		t.Fatalf("steady: launch %+v release %v preempt %v; want one spare %+v on server 0", d.Launch, d.Release, d.Preempt, want)
	}
	spare := policy.InstanceView{ID: 2, Launch: d.Launch[0], Ready: true, Resources: want}

	// Next step: the spare stays and takes a share of R; the function's own instance the rest.
	d, err = p.Control(view(280, core, spare), t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Launch)+len(d.Release)+len(d.Preempt) != 0 || !(d.Weights[2] > 0) || math.Abs(d.Weights[1]+d.Weights[2]-280) > 1e-9 {
		t.Fatalf("kept: launch %+v release %v preempt %v weights %v; want nothing, weights summing to 280 with the spare's > 0", d.Launch, d.Release, d.Preempt, d.Weights)
	}

	// A burst: Alg. 1 decides as if the spare were not there; its launch on server 0 needs the
	// spare's room, so the spare is preempted, and what is held per server fits.
	d, err = p.Control(view(700, core, spare), t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Preempt, []int{2}) || len(d.Launch) == 0 || d.Launch[0].Spare || d.Launch[0].Server != 0 {
		t.Fatalf("burst: launch %+v preempt %v; want an own launch on server 0 and spare 2 preempted", d.Launch, d.Preempt)
	}
	used := map[int]cluster.Resources{0: filler.Resources}
	for _, l := range d.Launch {
		used[l.Server] = used[l.Server].Add(l.Resources)
	}
	for s, u := range used {
		if !cluster.DefaultServer.Fits(u) {
			t.Errorf("burst: server %d holds %+v after the decision, more than %+v", s, u, cluster.DefaultServer)
		}
	}

	// Idle: the spare drains (its room is not needed); it is not preempted.
	d, err = p.Control(view(0, core, spare), t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(d.Release, 2) || len(d.Preempt) != 0 || len(d.Launch) != 0 {
		t.Fatalf("idle: launch %+v release %v preempt %v; want spare 2 drained", d.Launch, d.Release, d.Preempt)
	}
}
