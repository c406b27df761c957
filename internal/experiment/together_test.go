package experiment

import (
	"context"
	"math"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/planner"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
)

// TestRunTogetherMatchesAlone: sagemaker-tuned and its twin sagemaker-ec2-tuned tuned together
// choose, report and score exactly what each does alone — searches coarse to fine with cost caps
// and miss budgets included — in about half the simulations.
func TestRunTogetherMatchesAlone(t *testing.T) {
	for _, st := range DefaultScoreSettings()[:2] {
		w, tuning, eval, parts := excerptWorld(t, st, 6*time.Minute)
		w.TunePrefix = 2 * time.Minute
		var pair []TunedBaseline
		for _, b := range DefaultTunedBaselines() {
			if b.Name == "sagemaker-tuned" || b.TwinOf == "sagemaker-tuned" {
				pair = append(pair, b)
			}
		}
		if g := TwinGroups(pair); len(pair) != 2 || !reflect.DeepEqual(g, [][]int{{0, 1}}) {
			t.Fatalf("%s: twins %d, groups %v; want sagemaker-tuned with its EC2 twin", st.Name, len(pair), g)
		}
		var alone, together atomic.Int64
		w.sims = &alone
		var want []TunedRun
		for _, b := range pair {
			r, err := w.RunTuned(context.Background(), b, tuning, eval, parts[0], parts[1])
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, r)
		}
		w.sims = &together
		got, errs := w.RunTogether(context.Background(), pair, tuning, eval, parts[0], parts[1])
		for i := range pair {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%s %s together:\n%+v\nalone:\n%+v", st.Name, pair[i].Name, got[i], want[i])
			}
		}
		if want[0].Search.Runs < 4 || together.Load() > alone.Load()/2+1 {
			t.Errorf("%s: %d runs searched; %d simulations together, %d alone: want about half", st.Name, want[0].Search.Runs, together.Load(), alone.Load())
		}
		t.Logf("%s: %d simulations together, %d alone; %s", st.Name, together.Load(), alone.Load(), got[1].Search.Options.Key())
	}
}

// TestTwinGroups: twins follow the baseline they name, in order; a twin without it stands alone.
func TestTwinGroups(t *testing.T) {
	bs := []TunedBaseline{{Name: "b", TwinOf: "a"}, {Name: "a"}, {Name: "c"}, {Name: "d", TwinOf: "a"}, {Name: "e", TwinOf: "x"}, {Name: "f", TwinOf: "b"}}
	want := [][]int{{1, 0, 3}, {2}, {4}, {5}}
	if g := TwinGroups(bs); !reflect.DeepEqual(g, want) {
		t.Fatalf("TwinGroups = %v, want %v", g, want)
	}
}

// TestRunNamedByDecodedOptions: a run whose options decode to what another run's did (mark's
// default headroom spelled out, as mark-tuned's answer often is) is answered from the cache
// without a simulation, with the same summary; other values, or another part, simulate.
func TestRunNamedByDecodedOptions(t *testing.T) {
	w, tuning, _, parts := excerptWorld(t, DefaultScoreSettings()[0], 4*time.Minute)
	w.Cache = tune.NewCache("", "")
	var sims atomic.Int64
	w.sims = &sims
	load := sim.Load(tuning)
	run := func(o tune.Options, budget int64) slo.Summary {
		t.Helper()
		s, err := w.RunPolicy(context.Background(), "mark", o, tuning, parts[0], load, budget)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	def := run(nil, 0)
	spelled := run(tune.Options{"headroom": planner.DefaultHeadroom, "cool_down": planner.DefaultCoolDown.String()}, 0)
	if n := sims.Load(); n != 1 || !reflect.DeepEqual(def, spelled) {
		t.Fatalf("the default spelled out: %d simulations (want 1), summaries equal %v", n, reflect.DeepEqual(def, spelled))
	}
	run(tune.Options{"headroom": 1.4}, 0)
	run(nil, 1<<40) // another miss budget is another run
	if n := sims.Load(); n != 3 {
		t.Errorf("%d simulations, want 3: another headroom and another budget simulate", n)
	}
}

// TestRunNamedByBuiltPolicy: runs are named by the policy as built, so knative told another
// load (it never reads it) is one simulation, and so is fixed told a load that rounds to the same
// count; a load that builds another fleet simulates, and every shared answer is the summary the
// run would have given alone.
func TestRunNamedByBuiltPolicy(t *testing.T) {
	w, tuning, _, parts := excerptWorld(t, DefaultScoreSettings()[1], 4*time.Minute)
	load := sim.Load(tuning)
	run := func(w World, policy string, l sim.LoadStats) slo.Summary {
		t.Helper()
		s, err := w.RunPolicy(context.Background(), policy, nil, tuning, parts[0], l, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	fresh := func() (World, *atomic.Int64) {
		w := w
		w.Cache = tune.NewCache("", "")
		n := new(atomic.Int64)
		w.sims = n
		return w, n
	}
	for _, c := range []struct {
		policy string
		other  sim.LoadStats
		sims   int64
	}{
		{"knative", sim.LoadStats{MeanRPS: 3 * load.MeanRPS, PeakRPS: 3 * load.PeakRPS}, 1},
		{"fixed", sim.LoadStats{MeanRPS: load.MeanRPS / 2, PeakRPS: load.PeakRPS * (1 + 1e-9)}, 1},
		{"fixed", sim.LoadStats{MeanRPS: load.MeanRPS, PeakRPS: 3 * load.PeakRPS}, 2},
	} {
		w1, n := fresh()
		first := run(w1, c.policy, load)
		second := run(w1, c.policy, c.other)
		if got := n.Load(); got != c.sims {
			t.Errorf("%s told %+v after %+v: %d simulations, want %d", c.policy, c.other, load, got, c.sims)
		}
		w2, _ := fresh()
		if alone := run(w2, c.policy, c.other); !reflect.DeepEqual(second, alone) {
			t.Errorf("%s told %+v: the shared answer %+v is not the run's own %+v", c.policy, c.other, second, alone)
		}
		if c.sims == 2 && reflect.DeepEqual(first, second) {
			t.Errorf("%s: another fleet gave the same summary: the case tests nothing", c.policy)
		}
	}
}

// TestDumpOptions: the dump names values, not pointers; tells nil from empty, −0 from 0 and
// map entries in any order; and refuses what it cannot name by value.
func TestDumpOptions(t *testing.T) {
	type inner struct{ X []int }
	type opts struct {
		A    float64
		P    *inner
		M    map[string]int
		hide string
	}
	one := 1
	d := func(v any) string {
		t.Helper()
		s, ok := dumpOptions(v)
		if !ok {
			t.Fatalf("%+v: no dump", v)
		}
		return s
	}
	a := &opts{A: 1, P: &inner{X: []int{one}}, M: map[string]int{"a": 1, "b": 2}, hide: "h"}
	b := &opts{A: 1, P: &inner{X: []int{1}}, M: map[string]int{"b": 2, "a": 1}, hide: "h"}
	if d(a) != d(b) {
		t.Errorf("equal values dump apart:\n%s\n%s", d(a), d(b))
	}
	for _, c := range []*opts{
		{A: 1, P: &inner{X: []int{}}, M: a.M, hide: "h"},
		{A: 1, P: &inner{X: []int{1}}, M: a.M, hide: "i"},
		{A: 1, M: a.M, hide: "h"},
		{A: math.Copysign(0, -1), P: a.P, M: a.M, hide: "h"},
	} {
		if d(c) == d(a) {
			t.Errorf("%+v dumps as %+v", c, a)
		}
	}
	if d(&opts{}) == d(&opts{A: math.Copysign(0, -1)}) {
		t.Error("−0 dumps as 0")
	}
	for _, v := range []any{&struct{ F func() }{F: func() {}}, &struct{ C chan int }{C: make(chan int)}} {
		if _, ok := dumpOptions(v); ok {
			t.Errorf("%T: dumped", v)
		}
	}
}

// TestRunTogetherNotTwins: a "twin" whose fixed options differ beyond its twin keys is refused;
// one whose types turn out to be other machines (sim.ErrNotTwin) runs apart, as RunTuned runs it.
func TestRunTogetherNotTwins(t *testing.T) {
	w, tuning, eval, parts := excerptWorld(t, DefaultScoreSettings()[0], 3*time.Minute)
	var lead, twin TunedBaseline
	for _, b := range DefaultTunedBaselines() {
		switch {
		case b.Name == "sagemaker-tuned":
			lead = b
		case b.TwinOf == "sagemaker-tuned":
			twin = b
		}
	}
	bad := twin
	bad.Fixed = tune.Options{"pricing": "ec2", "over_provisioning": 1.5}
	if _, errs := w.RunTogether(context.Background(), []TunedBaseline{lead, bad}, tuning, eval, parts[0], parts[1]); errs[0] == nil || errs[1] == nil {
		t.Errorf("a twin with another over-provisioning: errors %v, want both refused", errs)
	}
	other := twin
	other.Name, other.TwinType = "sagemaker-xlarge-tuned", func(string) string { return "c5.xlarge" }
	got, errs := w.RunTogether(context.Background(), []TunedBaseline{lead, other}, tuning, eval, parts[0], parts[1])
	for i, b := range []TunedBaseline{lead, other} {
		want, err := w.RunTuned(context.Background(), b, tuning, eval, parts[0], parts[1])
		if err != nil || errs[i] != nil {
			t.Fatalf("%s: alone %v, together %v", b.Name, err, errs[i])
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("%s: together\n%+v\nalone\n%+v", b.Name, got[i], want)
		}
	}
}
