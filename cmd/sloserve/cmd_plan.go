package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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

// runPlanBatch is 'sloserve plan batch': BATCH's optimiser (analytic.Optimize) for one arrival
// process and one service-time profile.
func runPlanBatch(_ context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("plan batch", flag.ContinueOnError)
	rate := fs.Float64("rate", 0, "Poisson arrival rate, requests per second")
	renameFlag(fs, "rate", "rps")
	tracePath := fs.String("trace", "", "arrival-list trace (e.g. inter-arrival seconds, one per line) to fit a MAP(2) to")
	mapFiles := fs.String("map", "", "MAP as two files D0,D1 (comma-separated matrices, rates per second)")
	profilePath := fs.String("profile", "", "service-time polynomial JSON (sloserve's, or BATCH's batch-lambda-polynomials.json with --model); default: BATCH's TF-resnetV2")
	model := fs.String("model", "TF-resnetV2", "model to take from a BATCH polynomials file")
	sloMS := fs.Float64("slo-ms", 0, "latency SLO on the percentile, milliseconds (minimise cost, Eq. 2)")
	pct := fs.Float64("percentile", 0.95, "SLO percentile p, as 0.95 or 95")
	budget := fs.Float64("budget", 0, "budget per request in dollars: minimise the percentile instead (Eq. 3)")
	g := analytic.DefaultGrid()
	memMin := fs.Int("memory-min-mb", g.MemoryMinMB, "smallest memory, MB (the profile's domain also bounds it)")
	memMax := fs.Int("memory-max-mb", g.MemoryMaxMB, "largest memory, MB")
	memStep := fs.Int("memory-step-mb", g.MemoryStepMB, "memory step, MB")
	maxBatch := fs.Int("max-batch", g.MaxBatch, "largest max batch size B explored")
	tStep := fs.Float64("timeout-step-ms", float64(g.TimeoutStep)/1e6, "timeout grid step, ms")
	tMax := fs.Float64("timeout-max-ms", float64(g.TimeoutMax)/1e6, "largest timeout, ms")
	serviceCV := fs.Float64("service-cv", 0, "coefficient of variation of batch service times (log-normal) the SLO must hold under: the predicted fraction of requests within --slo-ms is at least the percentile (0: BATCH's deterministic service)")
	paper := fs.Bool("paper-start", false, "use the paper's Eqs. 13-14 for the initial phase instead of the exact one")
	validate := fs.Bool("validate", false, "replay the plan through the buffer simulator (the --trace's own arrivals, or one hour sampled from --rate/--map) with --service-cv noise and print what it measures")
	seed := fs.Uint64("seed", 1, "--validate: seed of the sampled arrivals and the service noise")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := visited(fs)

	nsrc := 0
	for _, n := range []string{"rate", "trace", "map"} {
		if set[n] {
			nsrc++
		}
	}
	if nsrc != 1 {
		return usagef("plan batch: give exactly one of --rps, --trace, --map")
	}
	p := analytic.Problem{}
	var arrivals string
	var replayIA []float64 // --validate: the trace's own inter-arrivals
	switch {
	case set["rate"]:
		if !(*rate > 0) || math.IsInf(*rate, 0) {
			return usagef("plan batch: --rps must be > 0, got %g", *rate)
		}
		a, err := analytic.Poisson(*rate)
		if err != nil {
			return usagef("plan batch: --rps: %v", err)
		}
		p.Arrivals, arrivals = a, fmt.Sprintf("poisson(%g/s)", *rate)
	case set["trace"]:
		tr, err := trace.Open(*tracePath)
		if err != nil {
			return usagef("plan batch: --trace: %v", err)
		}
		x, err := analytic.Interarrivals(tr)
		if err != nil {
			return usagef("plan batch: --trace %s: %v", *tracePath, err)
		}
		a, _, err := analytic.FitMAP2(x)
		if err != nil {
			return usagef("plan batch: --trace %s: %v", *tracePath, err)
		}
		p.Arrivals, arrivals, replayIA = a, "map2-fit("+*tracePath+")", x
	case set["map"]:
		parts := strings.Split(*mapFiles, ",")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return usagef("plan batch: --map wants two files D0,D1, got %q", *mapFiles)
		}
		d0, err := os.Open(parts[0])
		if err != nil {
			return usagef("plan batch: --map: %v", err)
		}
		defer d0.Close()
		d1, err := os.Open(parts[1])
		if err != nil {
			return usagef("plan batch: --map: %v", err)
		}
		defer d1.Close()
		tm, err := trace.ReadMAP2(d0, d1)
		if err != nil {
			return usagef("plan batch: --map %s: %v", *mapFiles, err)
		}
		a, err := analytic.FromTrace(tm)
		if err != nil {
			return usagef("plan batch: --map %s: %v", *mapFiles, err)
		}
		p.Arrivals, arrivals = a, "map("+*mapFiles+")"
	}

	svc := analytic.TFResnetV2
	profileName := "default:" + svc.Name
	if set["profile"] {
		f, err := os.Open(*profilePath)
		if err != nil {
			return usagef("plan batch: --profile: %v", err)
		}
		svc, err = analytic.ReadPolynomial(f, *model)
		f.Close()
		if err != nil {
			return usagef("plan batch: --profile %s: %v", *profilePath, err)
		}
		profileName = *profilePath + ":" + svc.Name
	} else if set["model"] {
		switch *model {
		case analytic.TFResnetV2.Name:
		case analytic.TFInceptionV4.Name:
			svc = analytic.TFInceptionV4
		case analytic.MXNetResnet50.Name:
			svc = analytic.MXNetResnet50
		default:
			return usagef("plan batch: --model %q is not built in (TF-resnetV2, TF-inceptionV4, mxnet-resnet50); give --profile", *model)
		}
		profileName = "builtin:" + svc.Name
	}
	p.Service = svc

	p.Percentile = *pct
	if p.Percentile > 1 && p.Percentile < 100 {
		p.Percentile /= 100
	}
	if !(p.Percentile > 0 && p.Percentile < 1) {
		return usagef("plan batch: --percentile must be in (0, 1) or (1, 100), got %g", *pct)
	}
	switch {
	case set["budget"]:
		if !(*budget > 0) || math.IsInf(*budget, 0) {
			return usagef("plan batch: --budget must be > 0 dollars, got %g", *budget)
		}
		p.Objective, p.Budget = analytic.MinLatency, *budget
	case set["slo-ms"]:
		if !(*sloMS > 0) || math.IsInf(*sloMS, 0) {
			return usagef("plan batch: --slo-ms must be > 0, got %g", *sloMS)
		}
		p.Objective, p.SLO = analytic.MinCost, time.Duration(*sloMS*float64(time.Millisecond))
	default:
		return usagef("plan batch: give --slo-ms (minimise cost) or --budget (minimise latency)")
	}
	if set["service-cv"] {
		switch {
		case !(*serviceCV >= 0 && *serviceCV <= 2):
			return usagef("plan batch: --service-cv must be in [0, 2], got %g", *serviceCV)
		case p.Objective != analytic.MinCost:
			return usagef("plan batch: --service-cv constrains --slo-ms (minimise cost), not --budget")
		}
		p.ServiceCV = *serviceCV
	}
	if p.Objective == analytic.MinCost {
		// Report the predicted fraction of requests within the SLO under the service noise.
		p.Attainment = analytic.AttainmentSpec{Threshold: p.SLO, ServiceCV: p.ServiceCV}
	}
	if !(*tStep > 0) || !(*tMax > 0) {
		return usagef("plan batch: --timeout-step-ms and --timeout-max-ms must be > 0")
	}
	p.Grid = analytic.Grid{MemoryMinMB: *memMin, MemoryMaxMB: *memMax, MemoryStepMB: *memStep, MaxBatch: *maxBatch,
		TimeoutStep: time.Duration(*tStep * float64(time.Millisecond)), TimeoutMax: time.Duration(*tMax * float64(time.Millisecond))}
	if err := p.Grid.Validate(); err != nil {
		return usagef("plan batch: %v", err)
	}
	if *paper {
		p.Start = analytic.StartPaper
	}

	start := time.Now()
	plan, err := analytic.Optimize(p)
	elapsed := time.Since(start)
	if err != nil && !errors.Is(err, analytic.ErrInfeasible) {
		return usagef("plan batch: %v", err)
	}
	var replay *analytic.Replay
	if *validate && plan.MaxBatch > 0 {
		rng := rand.New(rand.NewPCG(*seed, *seed^0x5eed))
		if replayIA == nil {
			sm := analytic.NewSampler(p.Arrivals, rng)
			for tot := 0.0; tot < 3600; {
				d := sm.Next()
				tot += d
				replayIA = append(replayIA, d)
			}
		}
		r := analytic.ReplayPlan(replayIA, svc, plan, analytic.DefaultPricing(), p.SLO, p.ServiceCV, rng)
		replay = &r
	}
	out := planBatchOutput{Plan: plan, Validation: replay, Profile: profileName, Arrivals: arrivals, BudgetUSD: p.Budget,
		D0: p.Arrivals.D0(), D1: p.Arrivals.D1(), ElapsedMS: float64(elapsed) / 1e6}
	if p.SLO > 0 {
		out.SLOMS = float64(p.SLO) / 1e6
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(out); werr != nil {
			return fmt.Errorf("plan batch: %w", werr)
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "arrivals\t%s (%.3f req/s)\n", arrivals, plan.ArrivalRate)
		fmt.Fprintf(tw, "profile\t%s\n", profileName)
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
		fmt.Fprintf(tw, "explored\t%d configurations in %v\n", plan.Explored, elapsed.Round(time.Millisecond))
		if r := replay; r != nil {
			fmt.Fprintf(tw, "validation\t%d requests replayed through the buffer, service CV %g\n", r.Requests, r.ServiceCV)
			fmt.Fprintf(tw, "  p%g latency\t%.1f ms (predicted %.1f)\n", plan.Percentile*100, r.LatencyMS, plan.LatencyMS)
			if p.SLO > 0 {
				fmt.Fprintf(tw, "  within SLO\t%.4f (predicted %.4f)\n", r.WithinSLO, plan.Attainment)
			}
			fmt.Fprintf(tw, "  cost per request\t$%.4g (predicted $%.4g)\n", r.CostPerRequest, plan.CostPerRequest)
			fmt.Fprintf(tw, "  mean batch size\t%.2f (predicted %.2f)\n", r.MeanBatchSize, plan.MeanBatchSize)
		}
		if werr := tw.Flush(); werr != nil {
			return fmt.Errorf("plan batch: %w", werr)
		}
	}
	return err
}
