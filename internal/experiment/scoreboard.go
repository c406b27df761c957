package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/tune"

	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// ScoreSetting is one paper's benchmark setting of the scoreboard: a sim config (model
// profiles, catalog, SLO, policy options) and how every trace is rescaled for it.
type ScoreSetting struct {
	// Name names the setting in the table and the JSON ("mark", "batch", …).
	Name string `json:"name"`
	// Paper says whose benchmark it is and where it is documented.
	Paper string `json:"paper"`
	// Config is the sim config file, relative to the scoreboard's root directory; empty means
	// the simulator's defaults (sim.DefaultModel, 200 ms at 98 %).
	Config string `json:"config"`
	// MaxRPS rescales every trace so that its highest step rate is this many requests per second
	// (MLProxy §3.5's rule; MArk's Twitter × 1.8 peaks at 243 req/s), so that one setting sees
	// every trace at its paper's load.
	MaxRPS float64 `json:"max_rps"`
}

// DefaultScoreSettings returns the scoreboard's settings: sloserve's defaults and the papers'
// own benchmarks as the other helpers configured them.
func DefaultScoreSettings() []ScoreSetting {
	return []ScoreSetting{
		{Name: "default", Paper: "sloserve defaults: Inception (InferAll) on c5 + Lambda, 200 ms at 98 %", MaxRPS: 200},
		{Name: "mark", Paper: "MArk §5.1: Inception-v3 (mark-constants), 600 ms at 98 %, docs/mark.md", Config: "docs/mark-sim.yaml", MaxRPS: 240},
		{Name: "batch", Paper: "BATCH §VI: TF-resnetV2 on Lambda, p95 ≤ 3.053 s, docs/batch.md", Config: "docs/scoreboard/batch.yaml", MaxRPS: 135},
		{Name: "mlproxy", Paper: "MLProxy Table 3: Toxic Comments pods (20 s starts), p95 ≤ 500 ms, docs/sim.md", Config: "examples/sim-mlproxy-toxic-slow.yaml", MaxRPS: 100},
	}
}

// ScoreboardConfig configures RunScoreboard.
type ScoreboardConfig struct {
	// Root is the directory settings' config paths are relative to (the repository root).
	Root string
	// TraceDirs are searched recursively for rate-series traces (*.csv), in order.
	TraceDirs []string
	// Settings are the benchmark settings (default DefaultScoreSettings).
	Settings []ScoreSetting
	// Policies are the policies to run (default: every registered one; those not implemented, or
	// that cannot run in a setting — e.g. a VM policy on a serverless-only model — are noted and
	// skipped). A name ending in "-tuned" selects that tuned baseline.
	Policies []string
	// Tuned are the tuned baselines (default DefaultTunedBaselines when Policies is empty; the
	// ones Policies names otherwise).
	Tuned []TunedBaseline
	// Duration caps each part of every trace (tuning and evaluation) at its first Duration
	// (0: whole parts).
	Duration time.Duration
	// Seed overrides every setting's seed when non-zero.
	Seed uint64
	// TunePrefix > 0 has the tuned baselines search on each tuning part longer than it on its
	// first TunePrefix and check their answer on the whole part (World.TunePrefix: faster, an
	// approximation); 0 searches whole parts. The command's default is DefaultTunePrefix.
	TunePrefix time.Duration
	// Pool runs the scoreboard's independent runs, do(0 … n−1) (pool.New: on several
	// goroutines); nil runs them one at a time, in order, on the caller's goroutine.
	Pool func(ctx context.Context, n int, do func(i int))
	// Cache keeps runs across invocations (nil: none).
	Cache *tune.Cache
	// Progress, when set, is told about each run as it starts (from any worker, one at a time).
	Progress func(setting, trace, policy string)
}

// ScoreEntry is one run of the scoreboard: the Summary (whose trace field names the trace) with
// the setting's name and the cost relative to sagemaker's and to the oracle's on the same trace
// and setting.
type ScoreEntry struct {
	// Setting is the ScoreSetting's name.
	Setting string `json:"setting"`
	slo.Summary
	// Split is the trace part the row ran on: "evaluation" (tuned baselines were tuned on the
	// "tuning" part; SplitTrace).
	Split string `json:"split"`
	// CostVsSageMaker is this run's cost divided by sagemaker's (0 when sagemaker did not run).
	CostVsSageMaker float64 `json:"cost_vs_sagemaker,omitempty"`
	// CostVsOracle is this run's cost divided by the oracle row's (0 when there is none).
	CostVsOracle float64 `json:"cost_vs_oracle,omitempty"`
	// MetSLO reports SLOAttainment ≥ the target.
	MetSLO bool `json:"met_slo"`
	// Cheapest marks the cheapest policy among those that met the SLO on this trace and setting
	// (the oracle is not a policy and never has it).
	Cheapest bool `json:"cheapest_meeting_slo"`
	// Tuned is a tuned baseline's search: the knobs chosen and their outcome on the tuning part.
	Tuned *TunedInfo `json:"tuned,omitempty"`
}

// TunedInfo is what a tuned row's search found on the tuning part: the chosen options and
// their full run's attainment and cost there. When no candidate met the target (Met false) they
// are the best of the candidates that ran to the end; a probe stopped early (its misses passed
// the part's allowance, or its bill the cheapest meeting candidate's) reports no attainment or
// cost, so these two are not comparable across budgets. Runs counts the probes, stopped or not.
// PrefixS is the length of the tuning part's prefix the knobs were searched on before the answer
// was checked on the whole part (ScoreboardConfig.TunePrefix); 0 when searched on the whole part.
type TunedInfo struct {
	Options    tune.Options `json:"options"`
	Attainment float64      `json:"tuning_attainment"`
	Cost       float64      `json:"tuning_cost_usd"`
	Met        bool         `json:"tuning_met_slo"`
	Runs       int          `json:"runs"`
	PrefixS    float64      `json:"search_prefix_s"`
}

// DefaultTunePrefix is `sloserve sim --scoreboard`'s --tune-prefix: the week-long Azure traces'
// 72-hour tuning parts are searched on their first 12 hours (a sixth) and the answer checked on
// all 72 (issue #17 item 6, coarse to fine; docs/scoreboard.md "Speed" measures what it changes);
// every shorter tuning part (the Twitter day's 12 hours, the bursts, any --duration run up to
// 24 h) is searched whole. Rows say which in TunedInfo.PrefixS.
const DefaultTunePrefix = 12 * time.Hour

// OraclePolicy names the oracle row.
const OraclePolicy = "oracle"

// ScoreNote records a setting, trace or policy the scoreboard could not run, and why.
type ScoreNote struct {
	Setting, Trace, Policy string
	Err                    error
}

// String formats the note for stderr.
func (n ScoreNote) String() string {
	parts := []string{}
	for _, p := range []string{n.Setting, n.Trace, n.Policy} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " / ") + ": " + n.Err.Error()
}

// ScoreTraces lists the rate-series traces (*.csv) under dirs, recursively, as (name, path)
// pairs sorted by name within each directory; a missing directory is skipped.
func ScoreTraces(dirs []string) (names, paths []string, err error) {
	for _, dir := range dirs {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var found []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".csv") {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("scoreboard: traces: %w", err)
		}
		sort.Strings(found)
		for _, p := range found {
			rel, _ := filepath.Rel(dir, p)
			names, paths = append(names, filepath.ToSlash(rel)), append(paths, p)
		}
	}
	return names, paths, nil
}

// RunScoreboard runs every policy, every tuned baseline and the oracle on the evaluation part
// of every trace under every setting (tuned baselines searched on the tuning part first) and
// returns the entries in (setting, trace, row) order, with notes for what it skipped. Runs are
// independent and go on c.Pool. It stops with ctx's error.
func RunScoreboard(ctx context.Context, c ScoreboardConfig) ([]ScoreEntry, []ScoreNote, error) {
	jobs, notes, err := planScoreboard(c)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	progress := func(j *scoreJob) {
		if c.Progress != nil {
			mu.Lock()
			c.Progress(j.setting, j.trace, j.row)
			mu.Unlock()
		}
	}
	run := c.Pool
	if run == nil {
		run = inline
	}
	order := longestFirst(jobs) // the output keeps plan order
	run(ctx, len(jobs), func(k int) { j := jobs[order[k]]; progress(j); j.do(ctx) })
	if err := ctx.Err(); err != nil {
		return nil, notes, err
	}
	var out []ScoreEntry
	first := 0
	for i, j := range jobs {
		if j.note != nil {
			notes = append(notes, *j.note)
		} else {
			out = append(out, j.entry)
		}
		if i == len(jobs)-1 || jobs[i+1].group != j.group {
			rank(out[first:])
			first = len(out)
		}
	}
	return out, notes, nil
}

// inline calls do(0 … n−1) in order on the caller's goroutine until ctx is done.
func inline(ctx context.Context, n int, do func(i int)) {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		do(i)
	}
}

// scaleTrace rescales a rate series to peak at maxRPS and cuts it to d.
func scaleTrace(tr *trace.Trace, maxRPS float64, d time.Duration) (*trace.Trace, error) {
	o := trace.Options{To: d}
	if maxRPS > 0 {
		peak := tr.MaxRate()
		if !tr.IsSeries() || peak <= 0 {
			return nil, fmt.Errorf("max_rps needs a rate series with a positive peak")
		}
		o.RateScale = maxRPS / peak
	}
	return tr.With(o)
}

// rank fills the ratios to sagemaker and to the oracle, MetSLO and Cheapest of one trace's
// entries; the oracle is a floor, not a policy, and is never the cheapest.
func rank(es []ScoreEntry) {
	var sm, or float64
	for _, e := range es {
		switch e.Policy {
		case "sagemaker":
			sm = e.CostUSD.Total
		case OraclePolicy:
			or = e.CostUSD.Total
		}
	}
	best := -1
	for i := range es {
		e := &es[i]
		if sm > 0 {
			e.CostVsSageMaker = e.CostUSD.Total / sm
		}
		if or > 0 {
			e.CostVsOracle = e.CostUSD.Total / or
		}
		e.MetSLO = e.SLOAttainment >= e.SLO.Target
		if e.MetSLO && e.Policy != OraclePolicy && (best < 0 || e.CostUSD.Total < es[best].CostUSD.Total) {
			best = i
		}
	}
	for i := range es {
		// Ties (to the cent's hundredth) share the mark.
		es[i].Cheapest = best >= 0 && es[i].MetSLO && es[i].Policy != OraclePolicy && es[i].CostUSD.Total <= es[best].CostUSD.Total*(1+1e-9)+1e-6
	}
}

// WriteScoreTable prints the entries as one Markdown table (the docs/scoreboard.md format):
// setting, trace, policy, attainment, whether it met the SLO, cost, and cost / sagemaker;
// ★ marks the cheapest policy meeting the SLO on each trace and setting.
func WriteScoreTable(w io.Writer, es []ScoreEntry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| setting\t| trace\t| policy\t| SLO\t| attained\t| met\t| cost $\t| cost / sagemaker\t| cost / oracle\t| mean batch\t|")
	fmt.Fprintln(tw, "| ---\t| ---\t| ---\t| ---\t| ---:\t| ---\t| ---:\t| ---:\t| ---:\t| ---:\t|")
	for _, e := range es {
		met := "no"
		if e.MetSLO {
			met = "yes"
		}
		ratio := "–"
		if e.CostVsSageMaker > 0 {
			ratio = fmt.Sprintf("%.3f", e.CostVsSageMaker)
		}
		vsOracle := "–"
		if e.CostVsOracle > 0 {
			vsOracle = fmt.Sprintf("%.3f", e.CostVsOracle)
		}
		pol := e.Policy
		if e.Cheapest {
			pol += " ★"
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %.0f ms @ %.0f %%\t| %.2f %%\t| %s\t| %.4f\t| %s\t| %s\t| %.2f\t|\n", e.Setting, e.Trace, pol,
			e.SLO.ThresholdMS, 100*e.SLO.Target, 100*e.SLOAttainment, met, e.CostUSD.Total, ratio, vsOracle, e.MeanBatchSize)
	}
	return tw.Flush()
}

// ScoreVerdict summarises the acceptance question per (setting, trace): did sloserve meet the
// SLO and was it the cheapest policy that did; if not, which policy was.
func ScoreVerdict(es []ScoreEntry) []string {
	type key struct{ s, t string }
	var order []key
	groups := map[key][]ScoreEntry{}
	for _, e := range es {
		k := key{e.Setting, e.Trace}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e)
	}
	var out []string
	for _, k := range order {
		var me *ScoreEntry
		var win []string
		for i, e := range groups[k] {
			if e.Policy == "sloserve" {
				me = &groups[k][i]
			}
			if e.Cheapest {
				win = append(win, e.Policy)
			}
		}
		vs := ""
		if me != nil && me.CostVsOracle > 0 {
			vs = fmt.Sprintf(" (%.2f× the oracle)", me.CostVsOracle)
		}
		switch {
		case me == nil:
			out = append(out, fmt.Sprintf("%s / %s: sloserve did not run", k.s, k.t))
		case !me.MetSLO:
			out = append(out, fmt.Sprintf("%s / %s: sloserve MISSED the SLO (%.2f %% < %.0f %%); cheapest meeting it: %s", k.s, k.t,
				100*me.SLOAttainment, 100*me.SLO.Target, strings.Join(win, ", ")))
		case me.Cheapest && len(win) > 1:
			out = append(out, fmt.Sprintf("%s / %s: sloserve meets the SLO and is the cheapest that does, tied with %s%s", k.s, k.t, strings.Join(others(win, "sloserve"), ", "), vs))
		case me.Cheapest:
			out = append(out, fmt.Sprintf("%s / %s: sloserve meets the SLO and is the cheapest that does%s", k.s, k.t, vs))
		default:
			out = append(out, fmt.Sprintf("%s / %s: sloserve meets the SLO but %s is cheaper%s", k.s, k.t, strings.Join(win, ", "), vs))
		}
	}
	return out
}

func others(xs []string, x string) []string {
	var out []string
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func init() {
	register(Experiment{Name: "scoreboard", Summary: "every policy on every trace under every paper's setting (docs/scoreboard.md)",
		Doc: "docs/scoreboard.md; traces under testdata/traces and DATA/traces, 6 h each (--duration), several minutes", Run: scoreboardExperiment})
}

// scoreboardExperiment prints docs/scoreboard.md's table, the verdicts and what it skipped.
func scoreboardExperiment(ctx context.Context, o Options, w io.Writer) error {
	c := ScoreboardConfig{Root: o.Root, TraceDirs: []string{o.root("testdata/traces"), o.data("traces")},
		Duration: 6 * time.Hour, Policies: o.Policies, Seed: o.Seed, Pool: o.Pool, TunePrefix: DefaultTunePrefix}
	if o.Duration > 0 {
		c.Duration = o.Duration
	}
	c.Progress = func(setting, trace, policy string) { o.progress("%s / %s / %s", setting, trace, policy) }
	es, notes, err := RunScoreboard(ctx, c)
	if err != nil {
		return err
	}
	if err := WriteScoreTable(w, es); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, v := range ScoreVerdict(es) {
		fmt.Fprintln(w, v)
	}
	for _, n := range notes {
		fmt.Fprintln(w, "skipped:", n)
	}
	return nil
}
