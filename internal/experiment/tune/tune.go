// Package tune searches a policy's knobs for the cheapest configuration that meets an SLO on
// the tuning part of a trace (issue #17, docs/EVALUATION.md rule 1: baselines tuned as a
// competent operator would tune them). It knows nothing about the simulators: the caller gives a
// run function (options, trace part) → (attainment, cost), and the search, its early stop and
// its cache are the same for every world (the model port's sim.Run, the cluster and ensemble
// simulators).
package tune

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
)

// Part names a part of a trace: the tuning part chooses, the evaluation part scores.
type Part string

// The two parts of every trace (experiment.SplitTrace defines them).
const (
	Tuning     Part = "tuning"
	Evaluation Part = "evaluation"
)

// Options are a candidate's knob values keyed by their dotted YAML path under the policy's
// options section ("tracking.target_per_instance"); Nest turns them into the section's mapping.
type Options map[string]any

// Key is the options' canonical text: paths sorted, "path=value" joined by ";".
func (o Options) Key() string {
	ks := make([]string, 0, len(o))
	for k := range o {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for i, k := range ks {
		ks[i] = fmt.Sprintf("%s=%v", k, o[k])
	}
	return strings.Join(ks, ";")
}

// Nest turns dotted paths into nested mappings ({"a.b": 1} → {"a": {"b": 1}}), the shape a
// policy's YAML options section has.
func (o Options) Nest() map[string]any {
	out := map[string]any{}
	for k, v := range o {
		m := out
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	return out
}

// Knob is one searched option.
type Knob struct {
	// Path is the option's dotted YAML path in the policy's section.
	Path string
	// Values are the candidates. The first knob of a Problem is searched by bisection and its
	// values must run from the safest (most capacity, dearest) to the cheapest; the others form
	// a grid, every combination tried.
	Values []any
}

// Outcome is one run's result on a trace part.
type Outcome struct {
	// Attainment is the fraction of requests that met the SLO; Cost the run's bill (US dollars,
	// or the world's cost unit).
	Attainment float64 `json:"attainment"`
	Cost       float64 `json:"cost"`
	// Aborted reports that the run stopped early once its misses exceeded the SLO's budget: it
	// cannot meet the SLO, and Attainment and Cost are partial.
	Aborted bool `json:"aborted,omitempty"`
	// Dear reports that the run stopped early once its bill passed the cost cap it was given
	// (RunCapped): it cannot be the cheapest; whether it met the target is unknown.
	Dear bool `json:"dear,omitempty"`
}

// Run runs the policy with the given options (the tuned knobs only; the caller's base options
// stay under them) on part of the trace. target is the SLO's attainment target, for the early
// stop: a run may abort once more than (1 − target) of the part's requests missed.
type Run func(ctx context.Context, o Options, part Part, target float64) (Outcome, error)

// RunCapped is Run with a cost cap: the run may stop (Outcome.Dear) once its bill exceeds
// costCap.
type RunCapped func(ctx context.Context, o Options, part Part, target, costCap float64) (Outcome, error)

// Problem is one search: a policy's knobs on one trace under one SLO.
type Problem struct {
	// Policy names the policy (cache key and messages).
	Policy string
	// Knobs are the searched options (the first bisected, the rest a grid); Fixed are options
	// every candidate carries unchanged (e.g. pricing: ec2).
	Knobs []Knob
	Fixed Options
	// Run runs one candidate.
	Run Run
	// RunCapped, when set, runs every candidate once some candidate met the target, capped at
	// the cheapest cost met so far; Run runs the others. A candidate stopped dear (Outcome.Dear)
	// cannot win, and the bisection goes on to the cheaper values: with cost and attainment
	// falling along the first knob, as the bisection assumes, every safer value is dearer still,
	// so the answer is the uncapped search's (TestSearchCostCapSameAnswer,
	// TestSearchCostCapProperty). Where either does not fall, the two searches may end on
	// different candidates, never on a wrong one: the answer always ran whole and met the target.
	RunCapped RunCapped
	// Target is the SLO's attainment target on the tuning part.
	Target float64
	// Trace identifies the trace, setting, part bounds and seed in the cache key.
	Trace string
	// Cache keeps outcomes across searches and processes (nil: none).
	Cache *Cache
	// Descent searches the grid knobs one at a time (coordinate descent: each knob's values
	// with the others at the best found so far, their first values at the start) instead of
	// every combination: Σ|values| bisections instead of Π|values|.
	Descent bool
}

// Result is a search's answer.
type Result struct {
	// Options are the cheapest candidate's options (Fixed included) that met the target on the
	// tuning part; when none did, the candidate with the highest attainment (Met false).
	Options Options
	// Tuning is that candidate's outcome on the tuning part.
	Tuning Outcome
	// Met reports that some candidate met the target.
	Met bool
	// Runs counts the candidates run (cache hits included), Cached those the cache answered.
	Runs, Cached int
}

// Search returns the cheapest knobs meeting p.Target on the tuning part: for every combination
// of the grid knobs it bisects the first knob for the cheapest value that still meets the
// target (coarse to fine: the halving is the refinement), assuming attainment falls and the cost
// with it along the first knob's values; every measured candidate that met the target competes
// on cost, so a non-monotone knob only costs the search optimality, never a wrong answer.
func Search(ctx context.Context, p Problem) (Result, error) {
	if len(p.Knobs) == 0 {
		return Result{}, fmt.Errorf("tune %s: no knobs", p.Policy)
	}
	for _, k := range p.Knobs {
		if len(k.Values) == 0 {
			return Result{}, fmt.Errorf("tune %s: knob %s has no values", p.Policy, k.Path)
		}
	}
	s := &search{p: p}
	if !p.Descent {
		for _, combo := range grid(p.Knobs[1:]) {
			if err := s.bisect(ctx, combo); err != nil {
				return Result{}, err
			}
		}
		return s.best, nil
	}
	if len(p.Knobs) == 1 {
		err := s.bisect(ctx, Options{})
		return s.best, err
	}
	cur := Options{}
	for _, k := range p.Knobs[1:] {
		cur[k.Path] = k.Values[0]
	}
	done := map[string]bool{}
	for _, k := range p.Knobs[1:] {
		for _, v := range k.Values {
			c := maps.Clone(cur)
			c[k.Path] = v
			if done[c.Key()] {
				continue
			}
			done[c.Key()] = true
			if err := s.bisect(ctx, c); err != nil {
				return Result{}, err
			}
		}
		if s.best.Met {
			cur[k.Path] = s.best.Options[k.Path]
		}
	}
	return s.best, nil
}

type search struct {
	p    Problem
	best Result
}

// bisect searches the first knob's values with the grid knobs at combo.
func (s *search) bisect(ctx context.Context, combo Options) error {
	vals := s.p.Knobs[0].Values
	// Invariant: every index < lo met or stopped dear (or lo = 0), every index > hi missed.
	lo, hi := 0, len(vals)-1
	for lo <= hi {
		mid := (lo + hi) / 2
		met, dear, err := s.try(ctx, combo, vals[mid])
		if err != nil {
			return err
		}
		if met || dear { // dear: every safer value is dearer still, only cheaper ones can win
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return nil
}

// try runs one candidate and keeps it when it is the best so far. It reports whether the
// candidate met the target, and whether it stopped dearer than the best so far (capped).
func (s *search) try(ctx context.Context, combo Options, first any) (met, dear bool, err error) {
	o := maps.Clone(s.p.Fixed)
	if o == nil {
		o = Options{}
	}
	maps.Copy(o, combo)
	o[s.p.Knobs[0].Path] = first
	key := strings.Join([]string{s.p.Policy, o.Key(), s.p.Trace, fmt.Sprint(s.p.Target)}, "|")
	capped := s.best.Met && s.p.RunCapped != nil
	if capped {
		key += fmt.Sprintf("|cap %v", s.best.Tuning.Cost)
	}
	var out Outcome
	if !s.p.Cache.Get(key, &out) {
		var err error
		if capped {
			out, err = s.p.RunCapped(ctx, o, Tuning, s.p.Target, s.best.Tuning.Cost)
		} else {
			out, err = s.p.Run(ctx, o, Tuning, s.p.Target)
		}
		if err != nil {
			return false, false, fmt.Errorf("tune %s %s: %w", s.p.Policy, o.Key(), err)
		}
		s.p.Cache.Put(key, out)
	} else {
		s.best.Cached++
	}
	s.best.Runs++
	met = !out.Aborted && !out.Dear && out.Attainment >= s.p.Target
	b := &s.best
	switch {
	case met && (!b.Met || out.Cost < b.Tuning.Cost):
		b.Options, b.Tuning, b.Met = o, out, true
	case !met && !b.Met && (b.Options == nil || out.Attainment > b.Tuning.Attainment):
		b.Options, b.Tuning = o, out
	}
	return met, out.Dear, nil
}

// grid returns every combination of the knobs' values (one empty combination for no knobs).
func grid(knobs []Knob) []Options {
	out := []Options{{}}
	for _, k := range knobs {
		var next []Options
		for _, o := range out {
			for _, v := range k.Values {
				c := maps.Clone(o)
				c[k.Path] = v
				next = append(next, c)
			}
		}
		out = next
	}
	return out
}
