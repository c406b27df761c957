package experiment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// TunedBaseline is a `<policy>-tuned` row (issue #17 item 1, docs/EVALUATION.md rule 1): a
// registered model policy whose knobs are searched on a trace's tuning part for the cheapest
// configuration meeting the SLO there, then run on the evaluation part. The paper-default row of
// the same policy stays beside it.
type TunedBaseline struct {
	// Name is the row's policy name; it ends in "-tuned".
	Name string
	// Policy is the registered model policy it runs.
	Policy string
	// Fixed are options every candidate carries (e.g. pricing: ec2); the setting's own section
	// for the policy stays under them.
	Fixed tune.Options
	// Knobs returns the searched knobs for a model and catalog (tune.Problem's order: the first
	// from the safest value to the cheapest, the rest a grid).
	Knobs func(m profile.Model, cat *cost.Catalog) []tune.Knob
	// TwinOf names the tuned baseline this one is a twin of (RunTogether): the same Policy,
	// knobs and Fixed options but TwinKeys, which change only the type names it launches, so its
	// runs are the same simulations billed under TwinType's names (the twin's type for each type
	// the other launches). The scoreboard runs twins together.
	TwinOf   string
	TwinKeys []string
	TwinType func(string) string
}

// knobs returns constant knobs.
func knobs(ks ...tune.Knob) func(profile.Model, *cost.Catalog) []tune.Knob {
	return func(profile.Model, *cost.Catalog) []tune.Knob { return ks }
}

// The searched values. Target tracking: over-provisioning (capacity / tracking target, AWS's
// example 2; the issue measured 1.35–1.6 as enough), the instance type and the scale-out
// cool-down (AWS default 300 s). KPA: the target concurrency per pod (Knative default 1 at 70 %
// utilisation), the type and the stable window (default 60 s; the panic window stays 10 % of
// it). MArk: the headroom over the forecast (≥ 1) and the destroy cool-down; fixed: the
// headroom over the observed peak and the type.
var (
	overProvisioning = tune.Knob{Path: "over_provisioning", Values: []any{3.0, 2.0, 1.6, 1.35, 1.2, 1.1, 1.0}}
	kpaTarget        = tune.Knob{Path: "kpa.target", Values: []any{0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0}}
	trackingKnobs    = withTypes(overProvisioning, tune.Knob{Path: "tracking.scale_out_cooldown", Values: []any{"300s", "60s"}})
	kpaKnobs         = withTypes(kpaTarget, tune.Knob{Path: "kpa.stable_window", Values: []any{"60s", "180s"}})
	fixedKnobs       = withTypes(tune.Knob{Path: "headroom", Values: []any{1.5, 1.2, 1.0, 0.9, 0.8, 0.7, 0.6}})
	markKnobs        = knobs(tune.Knob{Path: "headroom", Values: []any{1.6, 1.4, 1.2, 1.1, 1.0}},
		tune.Knob{Path: "cool_down", Values: []any{"2m", "6m"}})
)

// maxTunedTypes bounds the type grid to the cheapest types per request at batch 1, to bound
// the search's runs (a dearer type at batch 1 can still win with batching; not searched).
const maxTunedTypes = 3

// withTypes returns first, a grid knob over the model's instance types that serve a request
// within its SLO in the catalog (cheapest per request first, as policy.CheapestType picks),
// then the other knobs.
func withTypes(first tune.Knob, rest ...tune.Knob) func(profile.Model, *cost.Catalog) []tune.Knob {
	return func(m profile.Model, cat *cost.Catalog) []tune.Knob {
		type tc struct {
			name string
			per  float64
		}
		var ts []tc
		for _, name := range m.Types() {
			it, ok := cat.Type(name)
			b := m.VM[name]
			if t := b.Curve.ServiceTime(1); ok && t > 0 {
				ts = append(ts, tc{name, it.PricePerHour * t.Seconds() / float64(max(b.Slots, 1))})
			}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].per < ts[j].per })
		ts = ts[:min(len(ts), maxTunedTypes)]
		out := []tune.Knob{first}
		if len(ts) > 1 {
			k := tune.Knob{Path: "type"}
			for _, t := range ts {
				k.Values = append(k.Values, t.name)
			}
			out = append(out, k)
		}
		return append(out, rest...)
	}
}

// lambdaKnobs: the function memory, from the largest of the tier's usual sizes down (BATCH
// §VI-A's 3008 MB first); bisection finds the smallest memory meeting the SLO. Only sizes the
// tier offers and the model's serverless profile covers (a fitted polynomial covers its fitted
// domain only, e.g. BATCH's TF-resnetV2 1280–3008 MB): a size it cannot run is no candidate.
func lambdaKnobs(m profile.Model, cat *cost.Catalog) []tune.Knob {
	var vals []any
	for _, mb := range []int{3008, 2560, 2048, 1769, 1536, 1280, 1024, 768, 512, 256} {
		if mb < cat.Serverless.MinMemoryMB || mb > cat.Serverless.MaxMemoryMB {
			continue
		}
		if m.Serverless != nil { // without a profile the policy names why it cannot run
			if _, err := m.Serverless.At(mb); err != nil {
				continue
			}
		}
		vals = append(vals, mb)
	}
	return []tune.Knob{{Path: "memory_mb", Values: vals}}
}

// DefaultTunedBaselines returns the model port's tuned baselines: target tracking at SageMaker
// and at EC2 prices, Knative's KPA, MLProxy's KPA, Lambda at its cheapest memory, the static
// fleet and MArk.
func DefaultTunedBaselines() []TunedBaseline {
	return []TunedBaseline{
		{Name: "sagemaker-tuned", Policy: "sagemaker", Knobs: trackingKnobs},
		{Name: "sagemaker-ec2-tuned", Policy: "sagemaker", Fixed: tune.Options{"pricing": "ec2"}, Knobs: trackingKnobs,
			TwinOf: "sagemaker-tuned", TwinKeys: []string{"pricing"}, TwinType: cost.HostedOn}, // EC2 pricing launches c5.large where hosting launches ml.c5.large
		{Name: "knative-tuned", Policy: "knative", Knobs: kpaKnobs},
		{Name: "mlproxy-tuned", Policy: "mlproxy", Knobs: withTypes(kpaTarget)},
		{Name: "lambda-tuned", Policy: "lambda", Knobs: lambdaKnobs},
		{Name: "fixed-tuned", Policy: "fixed", Knobs: fixedKnobs},
		{Name: "mark-tuned", Policy: "mark", Knobs: markKnobs},
	}
}

// World is one model-port setting a policy runs in: the engine config (SLO, seed), catalog,
// model, per-policy options of the setting's file, a key naming it in the cache, and the cache.
type World struct {
	Config  sim.Config
	Catalog *cost.Catalog
	Model   profile.Model
	// Decoder returns a policy's options section of the setting (nil: none).
	Decoder func(policy string) func(any) error
	// Key identifies the setting's inputs (config and trace contents, scale, seed) in the cache.
	Key   string
	Cache *tune.Cache
	// TunePrefix > 0 makes RunTuned search coarse to fine in time (searchPrefix): the knobs on
	// the tuning part's first TunePrefix, then its answer checked on the whole part. An
	// approximation (it can choose other options than the full search); 0 searches the whole part.
	TunePrefix time.Duration
	// sims, when set, counts the simulations run (tests).
	sims *atomic.Int64
}

// decoder returns the Env.Decode of policy with o over the setting's section.
func (w World) decoder(policy string, o tune.Options) func(any) error {
	var base func(any) error
	if w.Decoder != nil {
		base = w.Decoder(policy)
	}
	return func(v any) error {
		if base != nil {
			if err := base(v); err != nil {
				return err
			}
		}
		if len(o) == 0 {
			return nil
		}
		b, err := yaml.Marshal(o.Nest())
		if err != nil {
			return fmt.Errorf("policies.%s: tuned options: %w", policy, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("policies.%s: tuned options %s: %w", policy, o.Key(), err)
		}
		return nil
	}
}

// RunPolicy runs policy with options o (over the setting's) on tr, whose name is part; load
// is what the policy is told of the traffic (its Env.Load). budget > 0 aborts the run once more
// requests missed (sim.ErrMissBudget). Results are cached by (policy, options, world, part).
func (w World) RunPolicy(ctx context.Context, policy string, o tune.Options, tr *trace.Trace, part TracePart, load sim.LoadStats, budget int64) (slo.Summary, error) {
	return w.run(ctx, runReq{policy: policy, o: o, tr: tr, part: part, load: load, budget: budget})
}

// runReq is one simulation: policy with options o (over the setting's) on tr, whose name is
// part, told load, stopped early past budget misses (sim.Config.MissBudget, 0: never) or once
// its bill passes costCap (sim.ErrCostBudget, 0: never).
type runReq struct {
	policy  string
	o       tune.Options
	tr      *trace.Trace
	part    TracePart
	load    sim.LoadStats
	budget  int64
	costCap float64
}

// runner runs one simulation (World.run, or a share of a joint run: runTogether).
type runner func(ctx context.Context, r runReq) (slo.Summary, error)

// key is r's cache key in world w.
func (w World) key(r runReq) string {
	key := strings.Join([]string{"run", r.policy, r.o.Key(), w.Key, fmt.Sprintf("%s[%v,%v)", r.part.Part, r.part.From, r.part.To),
		fmt.Sprintf("%.6g/%.6g", r.load.MeanRPS, r.load.PeakRPS), fmt.Sprint(r.budget)}, "|")
	if r.costCap > 0 {
		key += fmt.Sprintf("|cap %v", r.costCap)
	}
	return key
}

// cached returns r's cached outcome (a summary, or an early stop's error), if hit.
func (w World) cached(r runReq) (s slo.Summary, hit bool, err error) {
	var c cachedRun
	if !w.Cache.Get(w.key(r), &c) {
		return slo.Summary{}, false, nil
	}
	s, err = c.outcome()
	return s, true, err
}

// keep caches r's outcome (a summary, or an early stop) under its key and the others given, and
// returns it.
func (w World) keep(r runReq, s slo.Summary, err error, also ...string) (slo.Summary, error) {
	c, ok := entryOf(s, err)
	if !ok {
		return slo.Summary{}, err
	}
	w.Cache.Put(w.key(r), c)
	for _, k := range also {
		w.Cache.Put(k, c)
	}
	return c.outcome()
}

// setup returns r's policy and engine config, twins billed as well (sim.Config.Twins), and
// the cache key that names r by the options the policy decoded (effective.go; "" when they
// cannot be named).
func (w World) setup(r runReq, twins ...sim.Twin) (sim.Policy, sim.Config, string, error) {
	dec := w.decoder(r.policy, r.o)
	dumps, named := []string{}, true
	env := sim.Env{Catalog: w.Catalog, Model: w.Model, SLO: w.Config.SLO, Load: r.load, Decode: func(v any) error {
		if err := dec(v); err != nil {
			return err
		}
		d, ok := dumpOptions(v)
		dumps, named = append(dumps, d), named && ok
		return nil
	}}
	p, err := sim.New(r.policy, env)
	if err != nil {
		return sim.Policy{}, sim.Config{}, "", err
	}
	cfg := w.Config
	cfg.Epoch = cfg.Epoch.Add(r.part.From)
	cfg.MissBudget, cfg.CostBudget = r.budget, overCap(r.costCap)
	cfg.Twins = twins
	key := ""
	if built, ok := dumpOptions(&p); ok {
		// The policy as built names the run: the options it kept and whatever it made of the
		// load (a count, an initial plan), so runs told other loads or other knob values that
		// build the same policy are one simulation (knative and mlproxy never read the load;
		// fixed's headroom and load often round to the same count).
		e := r
		e.load = sim.LoadStats{}
		sum := sha256.Sum256([]byte(built))
		e.o = tune.Options{"built": hex.EncodeToString(sum[:])}
		key = "built|" + w.key(e)
	} else if named {
		e := r
		// The load exactly (the key's %.6g is coarser, and another policy reads it).
		e.o = tune.Options{"decoded": strings.Join(dumps, "|"), "load": strconv.FormatFloat(r.load.MeanRPS, 'g', -1, 64) + "/" +
			strconv.FormatFloat(r.load.PeakRPS, 'g', -1, 64)}
		key = "effective|" + w.key(e)
	}
	return p, cfg, key, nil
}

// count counts a simulation (World.sims).
func (w World) count() {
	if w.sims != nil {
		w.sims.Add(1)
	}
}

// overCap is a cost cap a hair over costCap: summation order never aborts a tie.
func overCap(costCap float64) float64 { return costCap * (1 + 1e-9) }

// run runs r, cached by its options, world and part (a runner).
func (w World) run(ctx context.Context, r runReq) (slo.Summary, error) {
	if s, hit, err := w.cached(r); hit {
		return s, err
	}
	p, cfg, eff, err := w.setup(r)
	if err != nil {
		return slo.Summary{}, err
	}
	if eff == "" {
		eff = w.key(r)
	}
	var c cachedRun
	if w.Cache.Get(eff, &c) { // the same simulation, named by other options
		s, err := c.outcome()
		return w.keep(r, s, err)
	}
	w.count()
	res, err := sim.Run(ctx, cfg, w.Catalog, w.Model, p, arrivalMemo.Arrivals(r.tr, cfg.Seed))
	if err != nil {
		return w.keep(r, slo.Summary{}, err, eff)
	}
	return w.keep(r, res.Summary, nil, eff)
}

// cachedRun is a run's cache entry.
type cachedRun struct {
	Summary slo.Summary `json:"summary"`
	Aborted bool        `json:"aborted,omitempty"`
	Dear    bool        `json:"dear,omitempty"` // stopped at its cost cap
}

// entryOf is the cache entry of a run's outcome; false for an error that is not an early stop.
func entryOf(s slo.Summary, err error) (cachedRun, bool) {
	switch {
	case errors.Is(err, sim.ErrMissBudget):
		return cachedRun{Aborted: true}, true
	case errors.Is(err, sim.ErrCostBudget):
		return cachedRun{Dear: true}, true
	case err != nil:
		return cachedRun{}, false
	}
	return cachedRun{Summary: s}, true
}

// outcome is the entry's run outcome: its summary, or the early stop's error.
func (c cachedRun) outcome() (slo.Summary, error) {
	switch {
	case c.Aborted:
		return slo.Summary{}, sim.ErrMissBudget
	case c.Dear:
		return slo.Summary{}, sim.ErrCostBudget
	}
	return c.Summary, nil
}

// missBudget is the early stop of a tuning run on tr (issue #17 item 6): the most requests that
// may miss while the run can still meet target — MissAllowance of the part's exact request count
// (its arrivals for seed, which the trace tells before the run). A run stopped past it could not
// have met target; a run within it runs to the end, so a candidate's verdict is the full run's.
func missBudget(tr *trace.Trace, seed uint64, target float64) int64 {
	return MissAllowance(arrivalMemo.Count(tr, seed), target)
}

// MissAllowance is the largest m such that n − m requests met out of n still attain target, as
// slo.Recorder.Attainment divides (float64(n−m)/float64(n) ≥ target); 0 when none or n = 0
// (sim.Config.MissBudget 0 is no early stop).
func MissAllowance(n int64, target float64) int64 {
	if n <= 0 {
		return 0
	}
	meets := func(m int64) bool { return float64(n-m)/float64(n) >= target }
	m := min(max(int64(math.Floor((1-target)*float64(n))), 0), n)
	for m < n && meets(m+1) {
		m++
	}
	for m > 0 && !meets(m) {
		m--
	}
	if !meets(m) {
		return 0
	}
	return m
}

// arrivalMemo shares each trace part's arrivals, for a seed, across the runs that replay it:
// the rows and tuner probes of a setting, and the settings that replay the same part
// (trace.Memo). Its budget holds a few busy parts at once (fn3's four evaluation days are about
// 62 MB); the scoreboard's jobs run heaviest first, so those of one trace run close together.
var arrivalMemo = trace.NewMemo(384 << 20)

// TunedRun is a tuned baseline's outcome: the search on the tuning part and the run of its
// answer on the evaluation trace.
type TunedRun struct {
	Search  tune.Result
	Summary slo.Summary
	// Prefix is the length of the tuning part's prefix the search ran on before its answer was
	// checked on the whole part (searchPrefix); 0 when it searched the whole part.
	Prefix time.Duration
}

// RunTuned tunes b on tuning (its part tp) and runs the answer on eval (part ep). Both runs tell
// the policy the tuning part's load (an operator knows the past, not the future).
func (w World) RunTuned(ctx context.Context, b TunedBaseline, tuning, eval *trace.Trace, tp, ep TracePart) (TunedRun, error) {
	return w.runTuned(ctx, b, tuning, eval, tp, ep, w.run)
}

// runTuned is RunTuned with its simulations run by sim.
func (w World) runTuned(ctx context.Context, b TunedBaseline, tuning, eval *trace.Trace, tp, ep TracePart, sim1 runner) (TunedRun, error) {
	load := sim.Load(tuning)
	run, capped := w.tuningRuns(b.Policy, tuning, tp, load, sim1)
	p := tune.Problem{Policy: b.Name, Knobs: b.Knobs(w.Model, w.Catalog), Fixed: b.Fixed, Run: run, RunCapped: capped, Descent: true,
		Target: w.Config.SLO.Target, Trace: w.Key} // RunPolicy caches the runs
	var r tune.Result
	var err error
	var prefix time.Duration
	if w.TunePrefix > 0 && w.TunePrefix < tuning.Duration() {
		prefix = w.TunePrefix
		r, err = w.searchPrefix(ctx, b, p, tuning, tp, load, sim1)
	} else {
		r, err = tune.Search(ctx, p)
	}
	if err != nil {
		return TunedRun{}, err
	}
	s, err := sim1(ctx, runReq{policy: b.Policy, o: r.Options, tr: eval, part: ep, load: load})
	if err != nil {
		return TunedRun{}, fmt.Errorf("%s: %w", b.Name, err)
	}
	s.Policy = b.Name
	return TunedRun{Search: r, Summary: s, Prefix: prefix}, nil
}

// searchPrefix is the coarse-to-fine search of World.TunePrefix (issue #17 item 6, an
// approximation): p's search on the tuning part's first TunePrefix (the policy told the whole
// part's load), then its answer run on the whole part; when that misses the target, the first
// knob's safer values with the same grid knobs, one at a time, until one meets; when none does,
// the full search. It chooses what the full search chooses when the prefix ranks the candidates
// as the whole part does; Runs counts the prefix's runs and the whole part's.
func (w World) searchPrefix(ctx context.Context, b TunedBaseline, p tune.Problem, tuning *trace.Trace, tp TracePart, load sim.LoadStats, sim1 runner) (tune.Result, error) {
	pre, err := tuning.With(trace.Options{To: w.TunePrefix})
	if err != nil {
		return tune.Result{}, fmt.Errorf("%s: tuning prefix: %w", b.Name, err)
	}
	pp := TracePart{Part: tp.Part, From: tp.From, To: tp.From + w.TunePrefix}
	full, fullCapped := p.Run, p.RunCapped
	p.Run, p.RunCapped = w.tuningRuns(b.Policy, pre, pp, load, sim1)
	coarse, err := tune.Search(ctx, p)
	if err != nil || !coarse.Met {
		if err == nil {
			p.Run, p.RunCapped = full, fullCapped
			r, err := tune.Search(ctx, p)
			r.Runs += coarse.Runs
			return r, err
		}
		return coarse, err
	}
	first := p.Knobs[0]
	at := 0
	for i, v := range first.Values {
		if v == coarse.Options[first.Path] {
			at = i
		}
	}
	runs := coarse.Runs
	for i := at; i >= 0; i-- {
		o := maps.Clone(coarse.Options)
		o[first.Path] = first.Values[i]
		out, err := full(ctx, o, tune.Tuning, p.Target)
		if err != nil {
			return tune.Result{}, err
		}
		runs++
		if !out.Aborted && out.Attainment >= p.Target {
			return tune.Result{Options: o, Tuning: out, Met: true, Runs: runs}, nil
		}
	}
	p.Run, p.RunCapped = full, fullCapped
	r, err := tune.Search(ctx, p)
	r.Runs += runs
	return r, err
}

// tuningRuns are the tune.Run and tune.RunCapped of policy on tr (part pp) under the exact miss
// budget, run by sim1: the whole tuning part's, and the prefix's of the coarse search, whose last
// bisection probes run under the cost cap as the whole part's do (the same answer,
// tune.Problem.RunCapped).
func (w World) tuningRuns(policy string, tr *trace.Trace, pp TracePart, load sim.LoadStats, sim1 runner) (tune.Run, tune.RunCapped) {
	budget := missBudget(tr, w.Config.Seed, w.Config.SLO.Target)
	capped := func(ctx context.Context, o tune.Options, _ tune.Part, _, costCap float64) (tune.Outcome, error) {
		s, err := sim1(ctx, runReq{policy: policy, o: o, tr: tr, part: pp, load: load, budget: budget, costCap: costCap})
		switch {
		case errors.Is(err, sim.ErrMissBudget):
			return tune.Outcome{Aborted: true}, nil
		case errors.Is(err, sim.ErrCostBudget):
			return tune.Outcome{Dear: true}, nil
		case err != nil:
			return tune.Outcome{}, err
		}
		return tune.Outcome{Attainment: s.SLOAttainment, Cost: s.CostUSD.Total}, nil
	}
	run := func(ctx context.Context, o tune.Options, p tune.Part, target float64) (tune.Outcome, error) {
		return capped(ctx, o, p, target, 0)
	}
	return run, capped
}
