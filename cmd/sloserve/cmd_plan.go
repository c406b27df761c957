package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/analytic"
	"github.com/sloserve/sloserve/internal/trace"
)

// runPlan dispatches 'plan <planner>'; today the only planner is 'batch'.
func runPlan(ctx context.Context, args []string, e env) error {
	if isHelp(args) {
		return showHelp("plan")
	}
	if len(args) == 0 {
		return usagef("plan: missing planner (want: batch)")
	}
	switch args[0] {
	case "batch":
		return runPlanBatch(ctx, args[1:], e)
	default:
		return usagef("plan: unknown planner %q (want: batch)", args[0])
	}
}

// planBatchOutput is the JSON printed by 'plan batch --json'.
type planBatchOutput struct {
	analytic.Plan
	Profile   string      `json:"profile"`
	Arrivals  string      `json:"arrivals"`
	SLOMS     float64     `json:"slo_ms,omitempty"`
	BudgetUSD float64     `json:"budget_usd,omitempty"`
	D0        [][]float64 `json:"map_d0"`
	D1        [][]float64 `json:"map_d1"`
	ElapsedMS float64     `json:"elapsed_ms"`
	// Validation is the replay of the plan through the buffer simulator (--validate).
	Validation *analytic.Replay `json:"validation,omitempty"`
}

// planBatchFlags are the command-line values of 'plan batch', before validation; set names the
// flags given (an alias marks the flag it stands for).
type planBatchFlags struct {
	rate                              float64 // Poisson arrival rate (requests/s)
	tracePath, mapFiles               string
	profilePath, model                string
	sloMS, pct, budget                float64 // ms; percentile; dollars per request
	memMin, memMax, memStep, maxBatch int     // MB, MB, MB, requests
	tStep, tMax                       float64 // ms
	serviceCV                         float64
	paper, validate, asJSON           bool
	seed                              uint64
	set                               map[string]bool
}

// planBatchOptions is 'plan batch' validated: BATCH's problem and what to do with its plan.
type planBatchOptions struct {
	problem  analytic.Problem
	arrivals string    // the arrival process, as printed
	profile  string    // the service-time profile, as printed
	replayIA []float64 // --validate: the trace's own inter-arrivals (s); nil to sample an hour
	validate bool
	seed     uint64
	asJSON   bool
}

// planBatchResult is the optimiser's plan, how long it took, and its replay under --validate.
type planBatchResult struct {
	plan    analytic.Plan
	elapsed time.Duration
	replay  *analytic.Replay
}

// runPlanBatch is 'sloserve plan batch': BATCH's optimiser (analytic.Optimize) for one arrival
// process and one service-time profile.
func runPlanBatch(_ context.Context, args []string, e env) error {
	o, err := parsePlanBatchFlags(args)
	if err != nil {
		return err
	}
	r, err := planBatch(o)
	if err != nil && !errors.Is(err, analytic.ErrInfeasible) {
		return usagef("plan batch: %v", err)
	}
	if werr := printPlanBatch(e.stdout, o, r); werr != nil {
		return fmt.Errorf("plan batch: %w", werr)
	}
	return err
}

// parsePlanBatchFlags parses the flags of 'plan batch' into its options; a bad one is a usage
// error naming it.
func parsePlanBatchFlags(args []string) (planBatchOptions, error) {
	var f planBatchFlags
	fs := flag.NewFlagSet("plan batch", flag.ContinueOnError)
	fs.Float64Var(&f.rate, "rate", 0, "Poisson arrival rate, requests per second")
	renameFlag(fs, "rate", "rps")
	fs.StringVar(&f.tracePath, "trace", "", "arrival-list trace (e.g. inter-arrival seconds, one per line) to fit a MAP(2) to")
	fs.StringVar(&f.mapFiles, "map", "", "MAP as two files D0,D1 (comma-separated matrices, rates per second)")
	fs.StringVar(&f.profilePath, "profile", "", "service-time polynomial JSON (sloserve's, or BATCH's batch-lambda-polynomials.json with --model); default: BATCH's TF-resnetV2")
	fs.StringVar(&f.model, "model", "TF-resnetV2", "model to take from a BATCH polynomials file")
	fs.Float64Var(&f.sloMS, "slo-ms", 0, "latency SLO on the percentile, milliseconds (minimise cost, Eq. 2)")
	fs.Float64Var(&f.pct, "percentile", 0.95, "SLO percentile p, as 0.95 or 95")
	fs.Float64Var(&f.budget, "budget", 0, "budget per request in dollars: minimise the percentile instead (Eq. 3)")
	g := analytic.DefaultGrid()
	fs.IntVar(&f.memMin, "memory-min-mb", g.MemoryMinMB, "smallest memory, MB (the profile's domain also bounds it)")
	fs.IntVar(&f.memMax, "memory-max-mb", g.MemoryMaxMB, "largest memory, MB")
	fs.IntVar(&f.memStep, "memory-step-mb", g.MemoryStepMB, "memory step, MB")
	fs.IntVar(&f.maxBatch, "max-batch", g.MaxBatch, "largest max batch size B explored")
	fs.Float64Var(&f.tStep, "timeout-step-ms", float64(g.TimeoutStep)/1e6, "timeout grid step, ms")
	fs.Float64Var(&f.tMax, "timeout-max-ms", float64(g.TimeoutMax)/1e6, "largest timeout, ms")
	fs.Float64Var(&f.serviceCV, "service-cv", 0, "coefficient of variation of batch service times (log-normal) the SLO must hold under: the predicted fraction of requests within --slo-ms is at least the percentile (0: BATCH's deterministic service)")
	fs.BoolVar(&f.paper, "paper-start", false, "use the paper's Eqs. 13-14 for the initial phase instead of the exact one")
	fs.BoolVar(&f.validate, "validate", false, "replay the plan through the buffer simulator (the --trace's own arrivals, or one hour sampled from --rate/--map) with --service-cv noise and print what it measures")
	fs.Uint64Var(&f.seed, "seed", 1, "--validate: seed of the sampled arrivals and the service noise")
	fs.BoolVar(&f.asJSON, "json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return planBatchOptions{}, err
	}
	f.set = visited(fs)
	return f.options()
}

// options validates the flags into the problem, in the order the usage errors are reported:
// arrivals, service profile, percentile and objective, grid.
func (f planBatchFlags) options() (planBatchOptions, error) {
	o := planBatchOptions{validate: f.validate, seed: f.seed, asJSON: f.asJSON}
	p := &o.problem
	var err error
	if p.Arrivals, o.arrivals, o.replayIA, err = f.arrivalProcess(); err != nil {
		return planBatchOptions{}, err
	}
	if p.Service, o.profile, err = f.service(); err != nil {
		return planBatchOptions{}, err
	}
	if err := f.objective(p); err != nil {
		return planBatchOptions{}, err
	}
	if !(f.tStep > 0) || !(f.tMax > 0) {
		return planBatchOptions{}, usagef("plan batch: --timeout-step-ms and --timeout-max-ms must be > 0")
	}
	p.Grid = analytic.Grid{MemoryMinMB: f.memMin, MemoryMaxMB: f.memMax, MemoryStepMB: f.memStep, MaxBatch: f.maxBatch,
		TimeoutStep: time.Duration(f.tStep * float64(time.Millisecond)), TimeoutMax: time.Duration(f.tMax * float64(time.Millisecond))}
	if err := p.Grid.Validate(); err != nil {
		return planBatchOptions{}, usagef("plan batch: %v", err)
	}
	if f.paper {
		p.Start = analytic.StartPaper
	}
	return o, nil
}

// arrivalProcess is the MAP of the one arrival source given (--rps, --trace or --map), its
// description and, for --trace, the trace's inter-arrivals.
func (f planBatchFlags) arrivalProcess() (a *analytic.MAP, desc string, ia []float64, err error) {
	nsrc := 0
	for _, n := range []string{"rate", "trace", "map"} {
		if f.set[n] {
			nsrc++
		}
	}
	if nsrc != 1 {
		return nil, "", nil, usagef("plan batch: give exactly one of --rps, --trace, --map")
	}
	switch {
	case f.set["rate"]:
		if !(f.rate > 0) || math.IsInf(f.rate, 0) {
			return nil, "", nil, usagef("plan batch: --rps must be > 0, got %g", f.rate)
		}
		if a, err = analytic.Poisson(f.rate); err != nil {
			return nil, "", nil, usagef("plan batch: --rps: %v", err)
		}
		return a, fmt.Sprintf("poisson(%g/s)", f.rate), nil, nil
	case f.set["trace"]:
		tr, err := trace.Open(f.tracePath)
		if err != nil {
			return nil, "", nil, usagef("plan batch: --trace: %v", err)
		}
		if ia, err = analytic.Interarrivals(tr); err != nil {
			return nil, "", nil, usagef("plan batch: --trace %s: %v", f.tracePath, err)
		}
		if a, _, err = analytic.FitMAP2(ia); err != nil {
			return nil, "", nil, usagef("plan batch: --trace %s: %v", f.tracePath, err)
		}
		return a, "map2-fit(" + f.tracePath + ")", ia, nil
	default:
		if a, err = readMAPFiles(f.mapFiles); err != nil {
			return nil, "", nil, err
		}
		return a, "map(" + f.mapFiles + ")", nil, nil
	}
}

// readMAPFiles reads the MAP of --map D0,D1 (two matrix files).
func readMAPFiles(mapFiles string) (*analytic.MAP, error) {
	parts := strings.Split(mapFiles, ",")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return nil, usagef("plan batch: --map wants two files D0,D1, got %q", mapFiles)
	}
	d0, err := os.Open(parts[0])
	if err != nil {
		return nil, usagef("plan batch: --map: %v", err)
	}
	defer d0.Close()
	d1, err := os.Open(parts[1])
	if err != nil {
		return nil, usagef("plan batch: --map: %v", err)
	}
	defer d1.Close()
	tm, err := trace.ReadMAP2(d0, d1)
	if err != nil {
		return nil, usagef("plan batch: --map %s: %v", mapFiles, err)
	}
	a, err := analytic.FromTrace(tm)
	if err != nil {
		return nil, usagef("plan batch: --map %s: %v", mapFiles, err)
	}
	return a, nil
}

// service is the service-time profile of --profile (and --model), a built-in --model, or BATCH's
// TF-resnetV2, with its description.
func (f planBatchFlags) service() (analytic.ServiceModel, string, error) {
	svc := analytic.TFResnetV2
	if f.set["profile"] {
		fh, err := os.Open(f.profilePath)
		if err != nil {
			return svc, "", usagef("plan batch: --profile: %v", err)
		}
		svc, err = analytic.ReadPolynomial(fh, f.model)
		fh.Close()
		if err != nil {
			return svc, "", usagef("plan batch: --profile %s: %v", f.profilePath, err)
		}
		return svc, f.profilePath + ":" + svc.Name, nil
	}
	if !f.set["model"] {
		return svc, "default:" + svc.Name, nil
	}
	switch f.model {
	case analytic.TFResnetV2.Name:
	case analytic.TFInceptionV4.Name:
		svc = analytic.TFInceptionV4
	case analytic.MXNetResnet50.Name:
		svc = analytic.MXNetResnet50
	default:
		return svc, "", usagef("plan batch: --model %q is not built in (TF-resnetV2, TF-inceptionV4, mxnet-resnet50); give --profile", f.model)
	}
	return svc, "builtin:" + svc.Name, nil
}

// objective sets p's percentile, objective (--slo-ms: minimise cost; --budget: minimise latency)
// and service noise.
func (f planBatchFlags) objective(p *analytic.Problem) error {
	p.Percentile = f.pct
	if p.Percentile > 1 && p.Percentile < 100 {
		p.Percentile /= 100
	}
	if !(p.Percentile > 0 && p.Percentile < 1) {
		return usagef("plan batch: --percentile must be in (0, 1) or (1, 100), got %g", f.pct)
	}
	switch {
	case f.set["budget"]:
		if !(f.budget > 0) || math.IsInf(f.budget, 0) {
			return usagef("plan batch: --budget must be > 0 dollars, got %g", f.budget)
		}
		p.Objective, p.Budget = analytic.MinLatency, f.budget
	case f.set["slo-ms"]:
		if !(f.sloMS > 0) || math.IsInf(f.sloMS, 0) {
			return usagef("plan batch: --slo-ms must be > 0, got %g", f.sloMS)
		}
		p.Objective, p.SLO = analytic.MinCost, time.Duration(f.sloMS*float64(time.Millisecond))
	default:
		return usagef("plan batch: give --slo-ms (minimise cost) or --budget (minimise latency)")
	}
	if f.set["service-cv"] {
		switch {
		case !(f.serviceCV >= 0 && f.serviceCV <= 2):
			return usagef("plan batch: --service-cv must be in [0, 2], got %g", f.serviceCV)
		case p.Objective != analytic.MinCost:
			return usagef("plan batch: --service-cv constrains --slo-ms (minimise cost), not --budget")
		}
		p.ServiceCV = f.serviceCV
	}
	if p.Objective == analytic.MinCost {
		// Report the predicted fraction of requests within the SLO under the service noise.
		p.Attainment = analytic.AttainmentSpec{Threshold: p.SLO, ServiceCV: p.ServiceCV}
	}
	return nil
}

// planBatch optimises the problem and, under --validate, replays a plan through the buffer
// simulator (the trace's own arrivals, or an hour sampled from the MAP). An infeasible problem
// still returns its plan, with analytic.ErrInfeasible.
func planBatch(o planBatchOptions) (planBatchResult, error) {
	p := o.problem
	start := time.Now()
	plan, err := analytic.Optimize(p)
	r := planBatchResult{plan: plan, elapsed: time.Since(start)}
	if err != nil && !errors.Is(err, analytic.ErrInfeasible) {
		return r, err
	}
	if o.validate && plan.MaxBatch > 0 {
		rng := rand.New(rand.NewPCG(o.seed, o.seed^0x5eed))
		ia := o.replayIA
		if ia == nil {
			sm := analytic.NewSampler(p.Arrivals, rng)
			for tot := 0.0; tot < 3600; {
				d := sm.Next()
				tot += d
				ia = append(ia, d)
			}
		}
		replay := analytic.ReplayPlan(ia, p.Service, plan, analytic.DefaultPricing(), p.SLO, p.ServiceCV, rng)
		r.replay = &replay
	}
	return r, err
}

// printPlanBatch prints the plan as JSON (planBatchOutput) or as a table.
func printPlanBatch(w io.Writer, o planBatchOptions, r planBatchResult) error {
	p, plan := o.problem, r.plan
	if o.asJSON {
		out := planBatchOutput{Plan: plan, Validation: r.replay, Profile: o.profile, Arrivals: o.arrivals, BudgetUSD: p.Budget,
			D0: p.Arrivals.D0(), D1: p.Arrivals.D1(), ElapsedMS: float64(r.elapsed) / 1e6}
		if p.SLO > 0 {
			out.SLOMS = float64(p.SLO) / 1e6
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "arrivals\t%s (%.3f req/s)\n", o.arrivals, plan.ArrivalRate)
	fmt.Fprintf(tw, "profile\t%s\n", o.profile)
	fmt.Fprintf(tw, "memory_mb\t%d\n", plan.MemoryMB)
	fmt.Fprintf(tw, "max_batch\t%d\n", plan.MaxBatch)
	fmt.Fprintf(tw, "timeout_ms\t%g\n", plan.TimeoutMS)
	fmt.Fprintf(tw, "p%g latency\t%.1f ms (service CV %g)\n", plan.Percentile*100, plan.LatencyMS, plan.ServiceCV)
	if p.Attainment.Threshold > 0 {
		fmt.Fprintf(tw, "within SLO\t%.4f of requests (predicted)\n", plan.Attainment)
	}
	fmt.Fprintf(tw, "cost per request\t$%.4g\n", plan.CostPerRequest)
	fmt.Fprintf(tw, "mean batch size\t%.2f\n", plan.MeanBatchSize)
	fmt.Fprintf(tw, "feasible\t%v (%s)\n", plan.Feasible, plan.Reason)
	fmt.Fprintf(tw, "explored\t%d configurations in %v\n", plan.Explored, r.elapsed.Round(time.Millisecond))
	if v := r.replay; v != nil {
		fmt.Fprintf(tw, "validation\t%d requests replayed through the buffer, service CV %g\n", v.Requests, v.ServiceCV)
		fmt.Fprintf(tw, "  p%g latency\t%.1f ms (predicted %.1f)\n", plan.Percentile*100, v.LatencyMS, plan.LatencyMS)
		if p.SLO > 0 {
			fmt.Fprintf(tw, "  within SLO\t%.4f (predicted %.4f)\n", v.WithinSLO, plan.Attainment)
		}
		fmt.Fprintf(tw, "  cost per request\t$%.4g (predicted $%.4g)\n", v.CostPerRequest, plan.CostPerRequest)
		fmt.Fprintf(tw, "  mean batch size\t%.2f (predicted %.2f)\n", v.MeanBatchSize, plan.MeanBatchSize)
	}
	return tw.Flush()
}
