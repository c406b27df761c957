package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/ensemble/measure"
	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
	simens "github.com/sloserve/sloserve/internal/sim/ensemble"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
	bundled "github.com/sloserve/sloserve/models"
)

// runEnsemble dispatches 'ensemble eval' (real bundled models), 'ensemble sim' (ImageNet
// per-class table) and 'ensemble simulate' (serving with per-model pools on a trace).
func runEnsemble(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return usagef("ensemble: missing subcommand (eval | sim | simulate)")
	}
	switch args[0] {
	case "eval":
		return runEnsembleEval(ctx, args[1:], e)
	case "sim":
		return runEnsembleSim(args[1:], e)
	case "simulate":
		return runEnsembleSimulate(ctx, args[1:], e)
	case "-h", "--help", "-help", "help":
		return showHelp("ensemble")
	}
	return usagef("ensemble: unknown subcommand %q (want eval, sim or simulate)", args[0])
}

// ensembleEvalOptions are the validated flags of 'ensemble eval'.
type ensembleEvalOptions struct {
	runtime  string        // model runtime
	baseline string        // single model to match, "" for the most accurate on validation
	target   float64       // accuracy target in (0, 1], 0 for the baseline's
	latency  time.Duration // latency constraint, 0 for just below the baseline's
	data     string        // labelled images: measure.DataSample or full
	dataDir  string        // Fashion-MNIST idx directory for full
	cfg      ensemble.EvalConfig
	measure  measure.Options
	asJSON   bool
}

// runEnsembleEval runs every bundled model on validation and test images and compares single
// models, the full and static ensembles and Cocktail's dynamic selection: every choice is made
// on the validation images, the test images are scored once.
func runEnsembleEval(ctx context.Context, args []string, e env) error {
	o, err := parseEnsembleEvalFlags(args)
	if err != nil {
		return err
	}
	rep, err := evalEnsembles(ctx, o)
	if err != nil {
		return err
	}
	if o.asJSON {
		return writeEnsembleJSON(e.stdout, rep)
	}
	return printEnsembleEval(e.stdout, rep)
}

// parseEnsembleEvalFlags parses and validates the flags of 'ensemble eval'; a bad one is a usage
// error naming it.
func parseEnsembleEvalFlags(args []string) (ensembleEvalOptions, error) {
	o := ensembleEvalOptions{cfg: ensemble.DefaultEvalConfig(), measure: measure.DefaultOptions()}
	fs := flag.NewFlagSet("ensemble eval", flag.ContinueOnError)
	fs.StringVar(&o.runtime, "runtime", models.RuntimeNative, "model runtime: "+strings.Join(models.Runtimes, " | "))
	fs.StringVar(&o.baseline, "baseline", "", "single model the ensembles must match, faster (default: the most accurate on the validation images)")
	fs.Float64Var(&o.target, "target-accuracy", 0, "accuracy target of the dynamic policy, in (0, 1] (default: the baseline's validation accuracy)")
	fs.DurationVar(&o.latency, "latency", 0, "latency constraint of the candidates (default: just below the baseline's latency)")
	cfg := &o.cfg
	fs.IntVar(&cfg.Passes, "passes", cfg.Passes, "times the test images are streamed (shuffled each pass; more than 1 replays images whose labels the weights have learned: an experiment, not a claim)")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "request rate in requests/s (maps requests onto 30 s selection intervals)")
	renameFlag(fs, "rate", "rps")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "shuffle seed")
	fs.Float64Var(&cfg.EarlyExit, "early-exit", cfg.EarlyExit, "slack of the early-exit strategy in (0, 1): stop querying members once those left could overturn the vote only with more than this share of their weight (the exact early exit, 1, is reported too)")
	fs.IntVar(&o.measure.LatencyRuns, "latency-runs", o.measure.LatencyRuns, "batch-1 runs per model whose median is its latency")
	fs.StringVar(&o.data, "data", measure.DataSample, "labelled images: sample (the bundled 2,000 validation and 1,000 test images) | full (the 10,000 held-out training and 10,000 test images of Fashion-MNIST in --data-dir)")
	fs.StringVar(&o.dataDir, "data-dir", fashion.DefaultDir, "Fashion-MNIST idx `dir` for --data full")
	fs.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	switch {
	case !slices.Contains(measure.DataSets, o.data):
		return o, usagef("ensemble eval: --data %q is not one of %v", o.data, measure.DataSets)
	case !slices.Contains(models.Runtimes, o.runtime):
		return o, usagef("ensemble eval: --runtime %q is not one of %v", o.runtime, models.Runtimes)
	case o.target < 0 || o.target > 1:
		return o, usagef("ensemble eval: --target-accuracy %v must be in (0, 1]", o.target)
	case o.latency < 0:
		return o, usagef("ensemble eval: --latency %v must be > 0", o.latency)
	}
	if err := cfg.Validate(); err != nil {
		return o, usagef("ensemble eval: %v", err)
	}
	if o.measure.LatencyRuns < 1 {
		return o, usagef("ensemble eval: --latency-runs %d must be >= 1", o.measure.LatencyRuns)
	}
	if names := bundled.Names(); o.baseline != "" && !slices.Contains(names, o.baseline) {
		return o, usagef("ensemble eval: --baseline %q is not a bundled model (%s)", o.baseline, strings.Join(names, ", "))
	}
	return o, nil
}

// evalEnsembles measures every bundled model on the validation and test images and evaluates
// the ensembles against the baseline (ensemble.Evaluate).
func evalEnsembles(ctx context.Context, o ensembleEvalOptions) (ensemble.EvalReport, error) {
	sample, err := measure.Load(o.data, o.dataDir, bundled.Sample)
	if err != nil {
		return ensemble.EvalReport{}, fmt.Errorf("ensemble eval: %w", err)
	}
	valSample, err := measure.LoadValidation(o.data, o.dataDir, bundled.Validation)
	if err != nil {
		return ensemble.EvalReport{}, fmt.Errorf("ensemble eval: %w", err)
	}
	cls, closeAll, err := openBundledClassifiers(o.runtime)
	defer closeAll()
	if err != nil {
		return ensemble.EvalReport{}, fmt.Errorf("ensemble eval: %w", err)
	}
	val, test, err := measure.CollectSplit(ctx, cls, valSample, sample, o.measure)
	if err != nil {
		return ensemble.EvalReport{}, err
	}
	c, base, err := val.Baseline(o.baseline)
	if err != nil {
		return ensemble.EvalReport{}, err
	}
	if o.target > 0 {
		c.Accuracy = o.target
	}
	if o.latency > 0 {
		c.Latency = o.latency
	}
	ecfg := ensemble.DefaultConfig()
	ecfg.LatencyMargin = 0 // the bundled models run in microseconds: the paper's 5 ms would admit all
	rep, err := ensemble.Evaluate(val, test, c, ecfg, o.cfg)
	if err != nil {
		return ensemble.EvalReport{}, err
	}
	rep.Baseline = base
	return rep, nil
}

// openBundledClassifiers opens every bundled model with runtime; closeAll closes those opened,
// also when one fails to open.
func openBundledClassifiers(runtime string) (cls []measure.Classifier, closeAll func(), err error) {
	var runners []models.Runner
	closeAll = func() {
		for i := len(runners) - 1; i >= 0; i-- {
			runners[i].Close()
		}
	}
	for _, n := range bundled.Names() {
		r, meta, err := bundled.Open(n, models.Options{Runtime: runtime})
		if err != nil {
			return nil, closeAll, err
		}
		runners = append(runners, r)
		in := ""
		if len(meta.Inputs) > 0 {
			in = meta.Inputs[0].Name
		}
		cls = append(cls, measure.Classifier{Name: n, Runner: r, Input: in})
	}
	return cls, closeAll, nil
}

func printEnsembleEval(w io.Writer, rep ensemble.EvalReport) error {
	fmt.Fprintf(w, "baseline %s: target accuracy %.4f (validation), candidates faster than %.4f ms; chosen on %d validation images, %d scored test requests per strategy\n\n",
		rep.Baseline, rep.TargetAccuracy, rep.LatencyMS, rep.ValidationImages, rep.Requests)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	b8 := "-"
	if rep.Batch > 0 {
		b8 = fmt.Sprintf("b=%d ms", rep.Batch)
	}
	fmt.Fprintf(tw, "model\tvalidation\ttest\tb=1 ms\t%s\n", b8)
	for _, s := range rep.Single {
		fmt.Fprintf(tw, "%s\t%.4f\t%.4f\t%.4f\t%.4f\n", s.Model, s.ValidationAccuracy, s.Accuracy, s.LatencyMS, s.BatchLatencyMS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, "ensemble\tvoting\taccuracy\tmean models\tlatency ms")
	for _, e := range rep.Ensembles {
		name := fmt.Sprintf("%s (%d)", e.Name, len(e.Models))
		if e.EarlyExit > 0 {
			name = fmt.Sprintf("%s (%d, slack %g)", e.Name, len(e.Models), e.EarlyExit)
		}
		for _, v := range e.Votes {
			fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.2f\t%.4f\n", name, v.Voting, v.Accuracy, v.MeanModels, v.LatencyMS)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nSelect's accuracy model against plain majority, most accurate candidates first (error correlation %.3f fitted on validation):\n", rep.ErrorCorrelation)
	fmt.Fprintln(tw, "models\tindependent\tcorrelated\tvalidation\ttest")
	for _, p := range rep.Predictions {
		fmt.Fprintf(tw, "%d\t%.4f\t%.4f\t%.4f\t%.4f\n", len(p.Models), p.Independent, p.Correlated, p.Validation, p.Test)
	}
	return tw.Flush()
}

// runEnsembleSim runs Cocktail's strategies on the ImageNet per-class table.
func runEnsembleSim(args []string, e env) error {
	fs := flag.NewFlagSet("ensemble sim", flag.ContinueOnError)
	table := fs.String("table", "../shared/data/ensembles/cocktail-imagenet-class-correct.csv", "per-class table `file` (model,class,correct of 50)")
	perClass := fs.Int("per-class", 50, "images per class in the table")
	latency := fs.Duration("latency", 160*time.Millisecond, "latency constraint (Table 1 latencies; 160ms admits all nine models)")
	target := fs.Float64("target-accuracy", 0.77, "accuracy target of the dynamic policy, in (0, 1] (default: between the best model, 0.74, and the full ensemble, 0.79)")
	cfg := ensemble.DefaultSimConfig(1, 200000)
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	fs.IntVar(&cfg.Requests, "requests", cfg.Requests, "simulated requests per strategy")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "request rate in requests/s")
	renameFlag(fs, "rate", "rps")
	fs.Float64Var(&cfg.Correlation, "correlation", cfg.Correlation, "correlation of models' correctness on one input, in [0, 1)")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *target <= 0 || *target > 1 {
		return usagef("ensemble sim: --target-accuracy %v must be in (0, 1]", *target)
	}
	if *latency <= 0 {
		return usagef("ensemble sim: --latency %v must be > 0", *latency)
	}
	if *perClass <= 0 {
		return usagef("ensemble sim: --per-class %d must be > 0", *perClass)
	}
	if err := cfg.Validate(); err != nil {
		return usagef("ensemble sim: %v", err)
	}
	f, err := os.Open(*table)
	if err != nil {
		return usagef("ensemble sim: --table: %v", err)
	}
	defer f.Close()
	tab, err := ensemble.ReadClassTable(f, *perClass)
	if err != nil {
		return err
	}
	pool := ensemble.ImageNetModels()
	for i := range pool {
		if m := tab.ModelIndex(pool[i].Name); m >= 0 {
			pool[i].Accuracy = tab.Accuracy(m)
		} else {
			pool[i].Name = "" // not in this table
		}
	}
	pool = slices.DeleteFunc(pool, func(m ensemble.Model) bool { return m.Name == "" })
	cmp, err := ensemble.Compare(tab, pool, ensemble.Constraint{Latency: *latency, Accuracy: *target}, ensemble.DefaultConfig(), cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeEnsembleJSON(e.stdout, cmp)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(e.stdout, "pool %v, target %.4f, %d requests, seed %d\n\n", cmp.Pool, *target, cfg.Requests, cfg.Seed)
	fmt.Fprintln(tw, "strategy\taccuracy\tmean models\tties (right)\tchanges\tlatency ms\t")
	for _, r := range cmp.Results {
		fmt.Fprintf(tw, "%s\t%.4f\t%.2f\t%d (%d)\t%d\t%.1f\t\n", r.Name, r.Accuracy, r.MeanModels, r.Ties, r.TiesCorrect, r.Changes, r.LatencyMS)
	}
	return tw.Flush()
}

func writeEnsembleJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ensembleSimulateOptions is 'ensemble simulate' validated and loaded: the simulator's config,
// the policies, Cocktail's data and the scaled trace.
type ensembleSimulateOptions struct {
	cfg    simens.EnsembleConfig
	pols   []simens.EnsemblePolicy
	data   *simens.CocktailData
	tr     *trace.Trace
	asJSON bool
}

// runEnsembleSimulate is `sloserve ensemble simulate`: Cocktail's setup (ImageNet per-class
// table, constraints, spot prices) served on a trace by the ensemble simulator
// (simens.RunEnsemble), one Summary per policy (docs/cocktail.md, "Serving simulation").
func runEnsembleSimulate(ctx context.Context, args []string, e env) error {
	o, err := parseEnsembleSimulateFlags(args)
	if err != nil {
		return err
	}
	sums, err := simulateEnsembles(ctx, o)
	if err != nil {
		return err
	}
	if o.asJSON {
		return slo.WriteJSON(e.stdout, sums)
	}
	return printEnsembleSimulate(e.stdout, o, sums)
}

// parseEnsembleSimulateFlags parses and validates the flags of 'ensemble simulate' and loads the
// data and trace they name; a bad one is a usage error naming it.
func parseEnsembleSimulateFlags(args []string) (ensembleSimulateOptions, error) {
	o := ensembleSimulateOptions{cfg: simens.DefaultEnsembleConfig()}
	cfg := &o.cfg
	fs := flag.NewFlagSet("ensemble simulate", flag.ContinueOnError)
	dataDir := fs.String("data", "../shared/data", "shared data `dir` (ensembles/, prices/, traces/)")
	tracePath := fs.String("trace", "", "arrival trace `file` (default: <data>/"+simens.CocktailTwitterTrace+")")
	policy := fs.String("policy", "cocktail,clipper,infaas", "comma-separated ensemble policies or 'all' ("+strings.Join(simens.EnsemblePolicyNames(), ", ")+")")
	duration := fs.Duration("duration", simens.CocktailDuration, "replay the first DURATION of the trace (0 = all of it)")
	meanRPS := fs.Float64("mean-rps", simens.CocktailMeanRPS, "scale the sample to this mean rate, requests/s (0 = the trace's own)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	sloMS := fs.Float64("slo-ms", float64(cfg.SLO.Threshold)/1e6, "response deadline in ms: requests are answered with the votes that arrived by then")
	fs.DurationVar(&cfg.FailAt, "fail-at", 0, "kill --fail-fraction of every pool's instances at this offset (0 = no failures)")
	fs.Float64Var(&cfg.FailFraction, "fail-fraction", 0.2, "fraction of each pool's instances killed at --fail-at, in [0, 1]")
	fs.BoolVar(&o.asJSON, "json", false, "print the Summaries as a JSON array")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if *sloMS <= 0 {
		return o, usagef("ensemble simulate: --slo-ms must be > 0, got %v", *sloMS)
	}
	if *duration < 0 || *meanRPS < 0 {
		return o, usagef("ensemble simulate: --duration and --mean-rps must be ≥ 0")
	}
	cfg.SLO.Threshold = time.Duration(*sloMS * float64(time.Millisecond))
	if cfg.FailAt == 0 {
		cfg.FailFraction = 0
	}
	if err := cfg.Validate(); err != nil {
		return o, usagef("ensemble simulate: %v", err)
	}
	var err error
	if o.pols, err = ensemblePolicies(*policy); err != nil {
		return o, err
	}
	if o.data, err = simens.LoadCocktailData(*dataDir); err != nil {
		return o, usagef("ensemble simulate: --data: %v", err)
	}
	cfg.SpotPrices = o.data.SpotPrices
	if *tracePath == "" {
		*tracePath = filepath.Join(*dataDir, simens.CocktailTwitterTrace)
	}
	o.tr, err = openCocktailTrace(*tracePath, *duration, *meanRPS)
	return o, err
}

// ensemblePolicies are the ensemble policies --policy names (comma-separated, or all).
func ensemblePolicies(policy string) ([]simens.EnsemblePolicy, error) {
	names := strings.Split(policy, ",")
	if policy == "all" {
		names = simens.EnsemblePolicyNames()
	}
	pols := make([]simens.EnsemblePolicy, 0, len(names))
	for _, n := range names {
		p, err := simens.NewEnsemblePolicy(strings.TrimSpace(n))
		if err != nil {
			return nil, usagef("ensemble simulate: --policy: %v", err)
		}
		pols = append(pols, p)
	}
	return pols, nil
}

// openCocktailTrace opens the trace at path, cut to duration (0: all of it) and, with meanRPS >
// 0, sampled and scaled to that mean rate as Cocktail does.
func openCocktailTrace(path string, duration time.Duration, meanRPS float64) (*trace.Trace, error) {
	tr, err := trace.Open(path)
	if err != nil {
		return nil, usagef("ensemble simulate: --trace: %v", err)
	}
	opts := trace.Options{To: duration}
	if meanRPS > 0 {
		if opts, err = simens.CocktailTraceOptions(tr, duration, meanRPS); err != nil {
			return nil, usagef("ensemble simulate: %v", err)
		}
		if duration == 0 {
			opts.To = 0
		}
	}
	if tr, err = tr.With(opts); err != nil {
		return nil, usagef("ensemble simulate: %v", err)
	}
	return tr, nil
}

// simulateEnsembles runs each policy on the trace in the ensemble simulator, one Summary each.
func simulateEnsembles(ctx context.Context, o ensembleSimulateOptions) ([]slo.Summary, error) {
	cat := cost.DefaultCatalog()
	sums := make([]slo.Summary, 0, len(o.pols))
	for _, p := range o.pols {
		res, err := simens.RunEnsemble(ctx, o.cfg, &cat, simens.NewEnsembleWorkload(o.data, o.tr, o.cfg.Seed), p)
		if err != nil {
			return nil, fmt.Errorf("ensemble simulate: %w", err)
		}
		sums = append(sums, res.Summary)
	}
	return sums, nil
}

// printEnsembleSimulate prints the policies' Summaries as a table.
func printEnsembleSimulate(w io.Writer, o ensembleSimulateOptions, sums []slo.Summary) error {
	tr, cfg := o.tr, o.cfg
	fmt.Fprintf(w, "trace %s, %v, mean %.1f req/s, deadline %v, seed %d\n\n", tr.Name, tr.Duration(), tr.MeanRate(), cfg.SLO.Threshold, cfg.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tcost $\taccuracy\ttarget met\tmean models\tSLO met\tp99 ms\trequests\tfailed\tmean VMs\t")
	for _, s := range sums {
		acc := 0.0
		if s.Accuracy != nil {
			acc = *s.Accuracy
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.4f\t%.4f\t%.2f\t%.4f\t%.0f\t%d\t%d\t%.1f\t\n", s.Policy, s.CostUSD.Total, acc,
			s.Extra["accuracy_target_met_fraction"], s.Extra["mean_models"], s.SLOAttainment, s.LatencyMS.P99, s.Requests, s.Failed, s.Extra["mean_vm_instances"])
	}
	return tw.Flush()
}
