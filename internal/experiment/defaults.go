package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/planner"
	"github.com/sloserve/sloserve/internal/policy/sloserve"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/trace"
)

// DefaultsProblem is one group of tuned defaults (issue #17 Build 2: every sloserve and
// paper-policy default that was chosen by measuring is re-chosen on the tuning parts only): the
// policy's knobs searched with the generic tuner (tune.Search) in one scoreboard setting, on the
// tuning part (SplitTrace) of every listed trace at once — a candidate meets the SLO only when it
// meets it on every part, and its cost is the parts' sum.
type DefaultsProblem struct {
	// Name names the group in the table ("mark", "sloserve-tier", …).
	Name string
	// Policy is the registered model policy whose options the knobs set.
	Policy string
	// Scopes are the scoreboard settings (DefaultScoreSettings) and traces (paths under the data
	// directory's traces/) whose tuning parts choose.
	Scopes []DefaultsScope
	// Knobs are the searched options, in tune.Problem's order (the first from the safest value
	// to the cheapest, bisected; the rest a grid, by coordinate descent).
	Knobs []tune.Knob
	// Committed are the code's defaults for the same knobs (formatted as the knobs' values).
	Committed tune.Options
}

// DefaultsScope is one setting and the traces whose tuning parts are searched in it.
type DefaultsScope struct {
	Setting string
	Traces  []string
}

// dur formats a duration as a knob value (YAML decodes it back into a time.Duration).
func dur(d time.Duration) string { return d.String() }

// DefaultsProblems returns the tuned defaults: MArk's headroom, cool-down and forecaster on
// MArk's setting (Twitter day and Azure fn4, the traces docs/mark.md chose them on); sloserve's
// serverless latency guard on BATCH's setting (the Twitter day); sloserve's headroom, tier
// hysteresis and tier dwell on its own default setting, where both tiers carry load.
func DefaultsProblems() []DefaultsProblem {
	markTraces := []string{"twitter-2017-05-25.rps.csv", "azure-functions/fn4.rpm.csv"}
	return []DefaultsProblem{
		{Name: "mark", Policy: "mark", Scopes: []DefaultsScope{{"mark", markTraces}},
			Knobs: []tune.Knob{{Path: "headroom", Values: []any{1.4, 1.2, 1.1, 1.0}},
				{Path: "cool_down", Values: []any{dur(planner.DefaultCoolDown), dur(planner.OriginalCoolDown), dur(time.Minute)}},
				{Path: "forecaster", Values: []any{"ewma", "naive", "holt-winters", "ar"}}},
			Committed: tune.Options{"headroom": planner.DefaultHeadroom, "cool_down": dur(planner.DefaultCoolDown), "forecaster": "ewma"}},
		{Name: "sloserve-serverless", Policy: "sloserve", Scopes: []DefaultsScope{{"batch", markTraces[:1]}, {"mark", markTraces}},
			Knobs:     []tune.Knob{{Path: "serverless.latency_guard", Values: []any{0.85, 0.88, 0.9, 0.92, 0.95, 0.97, 1.0}}},
			Committed: tune.Options{"serverless.latency_guard": sloserve.DefaultLatencyGuard}},
		{Name: "sloserve-tier", Policy: "sloserve", Scopes: []DefaultsScope{{"default", markTraces}},
			Knobs: []tune.Knob{{Path: "mark.headroom", Values: []any{1.4, 1.2, 1.1, 1.0}},
				{Path: "hysteresis", Values: []any{sloserve.DefaultHysteresis, 0.1, 0.5}},
				{Path: "tier_dwell", Values: []any{dur(sloserve.DefaultTierDwell), dur(5 * time.Minute), dur(30 * time.Minute)}}},
			Committed: tune.Options{"mark.headroom": 1.0, "hysteresis": sloserve.DefaultHysteresis, "tier_dwell": dur(sloserve.DefaultTierDwell)}},
	}
}

// DefaultsConfig configures ChooseDefaults.
type DefaultsConfig struct {
	// Root is the repository root (settings' config files); TraceDir holds the traces.
	Root, TraceDir string
	// Duration caps each tuning part at its first Duration (0: whole parts).
	Duration time.Duration
	// Seed overrides the settings' seeds when non-zero.
	Seed  uint64
	Cache *tune.Cache
}

// DefaultsBand is the search's chosen band: a committed default stays when it meets the SLO on
// every tuning part and costs at most this fraction more than the search's cheapest answer there
// (a difference below the runs' noise across seeds is no reason to move a default).
const DefaultsBand = 0.02

// DefaultsChoice is one problem's answer.
type DefaultsChoice struct {
	Problem DefaultsProblem
	// Parts names the tuning parts searched ("trace [from, to)").
	Parts []string
	// Search is the tuner's answer; Committed the committed defaults' outcome on the same parts.
	Search    tune.Result
	Committed tune.Outcome
	// Target is the first setting's SLO attainment target (DefaultsChoice's outcomes are
	// shifted to it: tuningParts.run).
	Target float64
}

// InBand reports whether the committed defaults met the SLO on every tuning part at a cost
// within DefaultsBand of the search's answer.
func (c DefaultsChoice) InBand(target float64) bool {
	o := c.Committed
	return !o.Aborted && o.Attainment >= target && (!c.Search.Met || o.Cost <= c.Search.Tuning.Cost*(1+DefaultsBand))
}

// tuningParts is one problem's tuning traces, each with its world (setting and trace in the
// cache key) and its setting's SLO target.
type tuningParts struct {
	worlds  []World
	traces  []*trace.Trace
	parts   []TracePart
	names   []string
	targets []float64
}

// loadTuningParts loads p's settings and the tuning part of each of their traces, scaled as the
// scoreboard scales them.
func loadTuningParts(c DefaultsConfig, p DefaultsProblem) (tuningParts, error) {
	var tp tuningParts
	for _, sc := range p.Scopes {
		var st *ScoreSetting
		for _, s := range DefaultScoreSettings() {
			if s.Name == sc.Setting {
				st = &s
			}
		}
		if st == nil {
			return tuningParts{}, fmt.Errorf("defaults %s: no setting %q", p.Name, sc.Setting)
		}
		w, err := loadWorld(ScoreboardConfig{Root: c.Root, Seed: c.Seed, Cache: c.Cache}, *st)
		if err != nil {
			return tuningParts{}, fmt.Errorf("defaults %s: %w", p.Name, err)
		}
		for _, name := range sc.Traces {
			if err := tp.add(c, w, st, name); err != nil {
				return tuningParts{}, fmt.Errorf("defaults %s: %w", p.Name, err)
			}
		}
	}
	if len(tp.traces) == 0 {
		return tuningParts{}, fmt.Errorf("defaults %s: no traces", p.Name)
	}
	return tp, nil
}

// add loads trace name's tuning part in world w of setting st.
func (tp *tuningParts) add(c DefaultsConfig, w World, st *ScoreSetting, name string) error {
	path := filepath.Join(c.TraceDir, filepath.FromSlash(name))
	tr, err := trace.Open(path)
	if err == nil {
		tr, err = scaleTrace(tr, st.MaxRPS, 0)
	}
	if err != nil {
		return err
	}
	tuning, _, parts, err := Split(name, tr, c.Duration)
	if err != nil {
		return err
	}
	d, err := FileDigest(path)
	if err != nil {
		return err
	}
	w.Key += "|" + name + "@" + d
	w.Config.Trace = tuning.Name
	tp.worlds, tp.traces, tp.parts = append(tp.worlds, w), append(tp.traces, tuning), append(tp.parts, parts[0])
	tp.names = append(tp.names, fmt.Sprintf("%s: %s [%v, %v)", st.Name, name, parts[0].From, parts[0].To))
	tp.targets = append(tp.targets, w.Config.SLO.Target)
	return nil
}

// run runs options o on every tuning part. Its attainment is the worst margin over the parts
// (attainment − that setting's target) shifted to the first part's target, so that it meets
// tp.targets[0] exactly when every part met its own; its cost is the parts' sum. Aborted when any
// part ran out of its miss budget.
func (tp tuningParts) run(ctx context.Context, policy string, o tune.Options) (tune.Outcome, error) {
	out, margin := tune.Outcome{}, math.Inf(1)
	for i, tr := range tp.traces {
		w := tp.worlds[i]
		s, err := w.RunPolicy(ctx, policy, o, tr, tp.parts[i], sim.Load(tr), missBudget(tr, w.Config.Seed, tp.targets[i]))
		if errors.Is(err, sim.ErrMissBudget) {
			return tune.Outcome{Aborted: true}, nil
		}
		if err != nil {
			return tune.Outcome{}, fmt.Errorf("%s on %s: %w", policy, tp.names[i], err)
		}
		margin = min(margin, s.SLOAttainment-tp.targets[i])
		out.Cost += s.CostUSD.Total
	}
	out.Attainment = tp.targets[0] + margin
	return out, nil
}

// key identifies the parts in the cache.
func (tp tuningParts) key() string {
	ks := make([]string, len(tp.worlds))
	for i, w := range tp.worlds {
		ks[i] = w.Key
	}
	return strings.Join(ks, ";")
}

// ChooseDefaults searches p's knobs on its tuning parts and runs the committed defaults there
// too.
func ChooseDefaults(ctx context.Context, c DefaultsConfig, p DefaultsProblem) (DefaultsChoice, error) {
	tp, err := loadTuningParts(c, p)
	if err != nil {
		return DefaultsChoice{}, err
	}
	run := func(ctx context.Context, o tune.Options, _ tune.Part, _ float64) (tune.Outcome, error) {
		return tp.run(ctx, p.Policy, o)
	}
	r, err := tune.Search(ctx, tune.Problem{Policy: p.Name, Knobs: p.Knobs, Run: run, Descent: true, Target: tp.targets[0],
		Trace: tp.key()})
	if err != nil {
		return DefaultsChoice{}, fmt.Errorf("defaults %s: %w", p.Name, err)
	}
	committed, err := tp.run(ctx, p.Policy, p.Committed)
	if err != nil {
		return DefaultsChoice{}, fmt.Errorf("defaults %s: committed: %w", p.Name, err)
	}
	return DefaultsChoice{Problem: p, Parts: tp.names, Search: r, Committed: committed, Target: tp.targets[0]}, nil
}

func init() {
	register(Experiment{Name: "defaults", Summary: "re-choose every tuned sloserve and MArk default on the traces' tuning parts only (docs/scoreboard.md)",
		Doc: "docs/scoreboard.md \"Which part each default was chosen on\"; DATA/traces (Twitter day, Azure fn4), --duration caps each tuning part", Run: defaultsExperiment})
}

// defaultsExperiment prints one row per knob: the committed default, the value the search
// chose, the tuning parts, and the tuning parts' worst attainment margin and summed cost of both.
func defaultsExperiment(ctx context.Context, o Options, w io.Writer) error {
	c := DefaultsConfig{Root: o.Root, TraceDir: o.data("traces"), Duration: o.Duration, Seed: o.Seed, Cache: tune.NewCache("", "")}
	fmt.Fprintln(w, "| group | knob | committed | chosen | tuning parts | committed: worst attainment − target, $ | chosen: worst attainment − target, $ | runs | committed in band |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | ---: | --- |")
	for _, p := range DefaultsProblems() {
		if !keep(o.Policies, p.Name) {
			continue
		}
		o.progress("defaults: %s", p.Name)
		ch, err := ChooseDefaults(ctx, c, p)
		if err != nil {
			return err
		}
		for _, k := range p.Knobs {
			fmt.Fprintf(w, "| %s | %s | %v | %v | %s | %s | %s | %d | %v |\n", p.Name, k.Path, p.Committed[k.Path], ch.Search.Options[k.Path],
				strings.Join(ch.Parts, "; "), outcome(ch.Committed, ch.Target), outcome(ch.Search.Tuning, ch.Target), ch.Search.Runs, ch.InBand(ch.Target))
		}
	}
	return nil
}

// outcome formats a tuning-part outcome: the worst part's attainment margin over its target
// and the parts' summed cost.
func outcome(o tune.Outcome, target float64) string {
	if o.Aborted {
		return "missed (stopped early)"
	}
	return fmt.Sprintf("%+.4f, %.2f", o.Attainment-target, o.Cost)
}
