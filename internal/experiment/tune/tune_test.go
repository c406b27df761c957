package tune

import (
	"context"
	"math/rand/v2"
	"testing"
)

// TestSearchCheapestMeeting: a target-like knob (attainment falls, cost falls as it grows) and a
// cool-down grid: the search returns the cheapest candidate meeting the target, bisecting (far
// fewer runs than the grid), and a second search with the same cache runs nothing new.
func TestSearchCheapestMeeting(t *testing.T) {
	var runs int
	run := func(_ context.Context, o Options, part Part, target float64) (Outcome, error) {
		runs++
		if part != Tuning {
			t.Errorf("part %q, want tuning", part)
		}
		x := o["target"].(float64)
		cd := o["cool_down"].(int)
		att := 1 - 0.01*x - 0.002*float64(cd) // more target or cool-down: fewer met
		cost := 10/x + 0.1*float64(cd)
		return Outcome{Attainment: att, Cost: cost, Aborted: att < target-0.05}, nil
	}
	var vals []any
	for x := 0.5; x <= 8; x += 0.5 {
		vals = append(vals, x)
	}
	c := NewCache(t.TempDir(), "salt")
	p := Problem{Policy: "toy", Knobs: []Knob{{Path: "target", Values: vals}, {Path: "cool_down", Values: []any{0, 1, 5}}},
		Fixed: Options{"pricing": "ec2"}, Run: run, Target: 0.97, Trace: "t", Cache: c}
	r, err := Search(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// Best: cool_down 0, target 3 (att 0.97, cost 3.33); 2.5 with cd 1 costs 4.1.
	if !r.Met || r.Options["target"] != 3.0 || r.Options["cool_down"] != 0 || r.Options["pricing"] != "ec2" {
		t.Fatalf("result %+v, want target 3, cool_down 0, pricing ec2, met", r)
	}
	if runs > 3*5 || runs != r.Runs {
		t.Errorf("runs %d (result says %d), want ≤ 15 by bisection (grid: %d)", runs, r.Runs, 3*len(vals))
	}
	// Coordinate descent finds the same answer here (cool_down's best does not depend on target).
	runs = 0
	p.Descent = true
	if rd, err := Search(context.Background(), p); err != nil || rd.Options.Key() != r.Options.Key() {
		t.Errorf("descent: %v, err %v; want %v", rd.Options, err, r.Options)
	}
	p.Descent = false
	runs = 0
	r2, err := Search(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 0 || r2.Cached != r2.Runs || r2.Options.Key() != r.Options.Key() {
		t.Errorf("second search: %d runs, %d of %d cached, options %v; want all from the cache, same answer", runs, r2.Cached, r2.Runs, r2.Options)
	}
	// A fresh cache on the same directory reads the files.
	p.Cache = NewCache(c.Dir, "salt")
	if _, err := Search(context.Background(), p); err != nil || runs != 0 {
		t.Errorf("file cache: %d runs, err %v; want 0", runs, err)
	}
	// Another salt misses.
	p.Cache = NewCache(c.Dir, "other")
	if _, err := Search(context.Background(), p); err != nil || runs == 0 {
		t.Errorf("other salt: %d runs, err %v; want fresh runs", runs, err)
	}
}

// TestSearchNoneMeets: when no candidate meets the target the result is the most attaining one,
// Met false.
func TestSearchNoneMeets(t *testing.T) {
	run := func(_ context.Context, o Options, _ Part, _ float64) (Outcome, error) {
		x := o["n"].(int)
		return Outcome{Attainment: 0.5 - 0.01*float64(x), Cost: float64(10 - x)}, nil
	}
	for _, descent := range []bool{false, true} {
		r, err := Search(context.Background(), Problem{Policy: "toy", Knobs: []Knob{{Path: "n", Values: []any{0, 1, 2, 3}}}, Run: run, Target: 0.9, Descent: descent})
		if err != nil {
			t.Fatal(err)
		}
		if r.Met || r.Options["n"] != 0 || r.Runs == 0 {
			t.Errorf("descent %v: result %+v, want n 0 (highest attainment), not met", descent, r)
		}
	}
}

// TestNest: dotted paths become nested mappings.
func TestNest(t *testing.T) {
	n := Options{"tracking.period": "1m", "tracking.min": 1, "type": "c5.large"}.Nest()
	tr, ok := n["tracking"].(map[string]any)
	if !ok || tr["period"] != "1m" || tr["min"] != 1 || n["type"] != "c5.large" {
		t.Errorf("nest: %v", n)
	}
}

// TestSearchCostCapSameAnswer: with RunCapped the search returns the same options, outcome and
// run count as without it (non-monotone attainment included), and the probes after some
// candidate met the target are capped — at the best cost so far.
func TestSearchCostCapSameAnswer(t *testing.T) {
	eval := func(o Options) Outcome {
		x := o["target"].(float64)
		cd := o["cool_down"].(int)
		att := 1 - 0.01*x - 0.002*float64(cd)
		if x == 2.5 {
			att -= 0.02 // a dip: the attainment is not monotone along the first knob
		}
		return Outcome{Attainment: att, Cost: 10/x + 0.3*float64(cd)}
	}
	run := func(_ context.Context, o Options, _ Part, _ float64) (Outcome, error) { return eval(o), nil }
	var capped, dear int
	var best float64
	runCapped := func(_ context.Context, o Options, _ Part, _, costCap float64) (Outcome, error) {
		capped++
		out := eval(o)
		if costCap < best-1e-12 {
			t.Errorf("cap %v below the search's best cost %v: a cap is a cost some candidate met at", costCap, best)
		}
		if out.Cost > costCap {
			dear++
			return Outcome{Dear: true}, nil
		}
		return out, nil
	}
	var vals []any
	for x := 0.5; x <= 8; x += 0.5 {
		vals = append(vals, x)
	}
	for _, descent := range []bool{false, true} {
		p := Problem{Policy: "toy", Knobs: []Knob{{Path: "target", Values: vals}, {Path: "cool_down", Values: []any{0, 1, 5}}},
			Run: run, Target: 0.97, Trace: "t", Descent: descent}
		want, err := Search(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		best = want.Tuning.Cost
		p.RunCapped = runCapped
		capped, dear = 0, 0
		got, err := Search(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Options.Key() != want.Options.Key() || got.Tuning != want.Tuning || got.Met != want.Met || got.Runs != want.Runs {
			t.Errorf("descent %v: capped search %+v, want %+v", descent, got, want)
		}
		if capped == 0 || dear == 0 {
			t.Errorf("descent %v: %d capped runs, %d stopped dear; want some of each", descent, capped, dear)
		}
	}
}

// TestSearchCostCapProperty: on random problems whose attainment and cost both fall along the
// first knob (the bisection's assumption) the capped search returns the uncapped one's answer
// and outcome; on problems where either does not, the answers may differ (either may be the
// cheaper), but the capped one still meets whenever the uncapped one does, with a candidate
// that ran whole and met the target.
func TestSearchCostCapProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		nv, ng := 2+rng.IntN(9), 1+rng.IntN(3)
		monotone := trial%2 == 0
		att := map[[2]int]float64{}
		cost := map[[2]int]float64{}
		for g := range ng {
			base, a := 1+rng.Float64()*3, 1.0
			for v := range nv {
				if monotone {
					a -= 0.008 * rng.Float64()
				} else {
					a = 1 - 0.004*float64(v) - 0.01*rng.Float64()
				}
				att[[2]int{v, g}] = a
				if monotone {
					cost[[2]int{v, g}] = base * (1 - 0.08*float64(v))
				} else {
					cost[[2]int{v, g}] = base * (0.5 + rng.Float64())
				}
			}
		}
		var vals, grid []any
		for v := range nv {
			vals = append(vals, v)
		}
		for g := range ng {
			grid = append(grid, g)
		}
		eval := func(o Options) Outcome {
			k := [2]int{o["v"].(int), o["g"].(int)}
			return Outcome{Attainment: att[k], Cost: cost[k]}
		}
		run := func(_ context.Context, o Options, _ Part, _ float64) (Outcome, error) { return eval(o), nil }
		capped := func(_ context.Context, o Options, _ Part, _, costCap float64) (Outcome, error) {
			if out := eval(o); out.Cost <= costCap {
				return out, nil
			}
			return Outcome{Dear: true}, nil
		}
		p := Problem{Policy: "toy", Knobs: []Knob{{Path: "v", Values: vals}, {Path: "g", Values: grid}},
			Run: run, Target: 0.975, Trace: "t", Descent: trial%3 != 0}
		want, err := Search(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		p.RunCapped = capped
		got, err := Search(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Met != want.Met {
			t.Fatalf("trial %d: capped met %v, uncapped %v", trial, got.Met, want.Met)
		}
		if got.Met && (got.Tuning != eval(got.Options) || got.Tuning.Attainment < p.Target) {
			t.Fatalf("trial %d: capped answer %v with outcome %+v, which is not a whole run meeting the target", trial, got.Options, got.Tuning)
		}
		if monotone && (got.Options.Key() != want.Options.Key() || got.Tuning != want.Tuning) {
			t.Fatalf("trial %d (attainment and cost fall along v): capped %v %+v, uncapped %v %+v", trial, got.Options, got.Tuning, want.Options, want.Tuning)
		}
	}
}
