package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/chaos"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// Demo defaults, chosen on a shared 2-core machine so that batching on meets the SLO
// (attainment ≥ 0.98) with a mean batch size above 1.
const (
	demoModel    = "mlp256"
	demoRPS      = 200.0
	demoDuration = 30 * time.Second
	demoSeed     = 1
)

// runDemo starts the gateway and local workers in-process, drives open-loop load (a Poisson
// phase, then a bursty MMPP(2) phase) and prints the Summary.
func runDemo(ctx context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the Summary as JSON")
	policy := fs.String("batching", batching.PolicyMLProxy, "batching `policy`: none, fixed or mlproxy")
	rps := fs.Float64("rps", demoRPS, "mean request `rate` of the Poisson phase (requests/s)")
	dur := fs.Duration("duration", demoDuration, "length of the load: 2/3 Poisson, 1/3 bursty MMPP")
	model := fs.String("model", demoModel, "bundled `model` to serve")
	instances := fs.Int("instances", 1, "worker processes serving the model")
	slots := fs.Int("slots", 2, "batches one worker takes at once (2: one per core of a 2-core machine)")
	sloMS := fs.Float64("slo-ms", 200, "latency SLO threshold in `ms` (target 0.98)")
	verbose := fs.Bool("v", false, "log lifecycle events to stderr")
	chaosOn := fs.Bool("chaos", false, "inject faults during the load: kill -9, hang (SIGSTOP) or slow down a random worker (default 3 instances)")
	chaosEvery := fs.Duration("chaos-every", 3*time.Second, "time between two faults with --chaos")
	chaosKinds := fs.String("chaos-kinds", "kill,hang,slow", "comma-separated `faults` --chaos chooses from: kill, hang, slow")
	ctlName := fs.String("controller", config.ControllerNone, "fleet `controller`: none (static --instances), sloserve, mark, target-tracking, knative or infless; with one, the load ramps calm → burst → calm")
	workerRPS := fs.Float64("worker-rps", 0, "nominal `rate` one worker serves (requests/s) for the controller; 0 = --rps/2")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case !slices.Contains([]string{batching.PolicyNone, batching.PolicyFixed, batching.PolicyMLProxy}, *policy):
		return usagef("demo: --batching must be none, fixed or mlproxy, got %q", *policy)
	case !(*rps > 0) || *rps > 5000:
		return usagef("demo: --rps must be in (0, 5000], got %v", *rps)
	case *dur < 3*time.Second || *dur > time.Hour:
		return usagef("demo: --duration must be in [3s, 1h], got %v", *dur)
	case *instances < 1 || *instances > 8:
		return usagef("demo: --instances must be in [1, 8], got %d", *instances)
	case *slots < 1 || *slots > 64:
		return usagef("demo: --slots must be in [1, 64], got %d", *slots)
	case !(*sloMS > 0):
		return usagef("demo: --slo-ms must be > 0, got %v", *sloMS)
	case !slices.Contains(config.ControllerPolicies(), *ctlName):
		return usagef("demo: --controller must be one of %v, got %q", config.ControllerPolicies(), *ctlName)
	case *workerRPS < 0:
		return usagef("demo: --worker-rps must be ≥ 0, got %v", *workerRPS)
	case *chaosEvery < 100*time.Millisecond:
		return usagef("demo: --chaos-every must be ≥ 100ms, got %v", *chaosEvery)
	}
	cc := chaos.DefaultConfig()
	cc.Every = *chaosEvery
	for _, k := range strings.Split(*chaosKinds, ",") {
		cc.Kinds = append(cc.Kinds, chaos.Kind(strings.TrimSpace(k)))
	}
	if err := cc.Validate(); err != nil {
		return usagef("demo: --chaos-kinds / --chaos-every: %v", err)
	}
	if *chaosOn && !flagSet(fs, "instances") {
		*instances = 3 // a fault then leaves two of three workers serving
	}
	payloads, err := samplePayloads(*model)
	if err != nil {
		return usagef("demo: --model: %v", err)
	}
	cfg := config.Default()
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Workers.Runtime, cfg.Workers.ONNXRuntimeLib = workerRuntime()
	cfg.Controller.Policy = *ctlName
	m := config.DefaultModel(*model)
	m.SLO = config.SLO{ThresholdMS: *sloMS, Target: 0.98}
	m.Instances = *instances
	m.Slots = *slots
	m.Batching.Policy = *policy
	m.Batching.SLO = m.SLO.Spec().Threshold
	m.Batching.MaxWait = min(m.Batching.MaxWait, m.Batching.SLO/4)
	if *ctlName != config.ControllerNone {
		if *workerRPS == 0 {
			*workerRPS = *rps / 2
		}
		demoController(&cfg, &m, *ctlName, *workerRPS)
	}
	cfg.Models = []config.Model{m}
	logw := io.Discard
	if *verbose {
		logw = e.stderr
	}
	log := slog.New(slog.NewTextHandler(logw, nil))
	if !*asJSON {
		fmt.Fprintf(e.stdout, "starting %d %s worker(s) for %s (runtime %s), batching %s ...\n", *instances, "sloserve", *model, cfg.Workers.Runtime, *policy)
	}
	st, err := gateway.Start(ctx, cfg, gateway.StackOptions{Logger: log, Version: readBuildVersion().Version})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st.Close(sctx)
	}()
	spec := m.SLO.Spec()
	// Warm-up: one second at a tenth of the rate, not recorded (connections, first batches).
	if _, err := load.Run(ctx, load.Config{Target: st.URL, Model: *model, Arrivals: trace.Poisson(*rps/10, demoSeed+1),
		Duration: time.Second, MaxRequests: 1 << 20, Payloads: payloads, SLO: spec}); err != nil {
		return fmt.Errorf("demo: warm-up: %w", err)
	}
	before, _ := st.Gateway.Stats(*model)
	ctlBefore, _ := st.Controller.View(*model)
	loadStart := time.Now()
	poisson := *dur * 2 / 3
	// MMPP(2): a calm phase at half the rate and a burst at 2.5×, switching every 2 s on average.
	burst := trace.MMPP2(0.5**rps, 2.5**rps, 0.5, 0.5)
	arrivals := load.Phases(
		load.Phase{Name: "poisson", Arrivals: trace.Poisson(*rps, demoSeed), Duration: poisson},
		load.Phase{Name: "mmpp", Arrivals: burst.Arrivals(demoSeed), Duration: *dur - poisson},
	)
	traceName, desc := "demo-poisson+mmpp", fmt.Sprintf("load: %v Poisson at %.0f rps, then %v MMPP(2) switching between %.0f and %.0f rps ...\n",
		poisson.Round(time.Second), *rps, (*dur-poisson).Round(time.Second), 0.5**rps, 2.5**rps)
	if *ctlName != config.ControllerNone {
		arrivals, desc = demoRamp(*rps, *dur)
		traceName = "demo-calm+burst+calm"
		desc = fmt.Sprintf("controller %s: workers of %.0f rps nominal, %d … %d instances\n", *ctlName, *workerRPS, cfg.Controller.MinInstances, cfg.Controller.MaxInstances) + desc
	}
	if !*asJSON {
		fmt.Fprint(e.stdout, desc)
	}
	var monkey *chaos.Monkey
	chaosDone := make(chan struct{})
	if *chaosOn {
		target, ok := st.Provider.(chaos.Target) // worker processes: the local provider
		if !ok {
			return fmt.Errorf("demo: --chaos needs local worker processes, the provider is %T", st.Provider)
		}
		if monkey, err = chaos.New(target, cc, log); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		cctx, stopChaos := context.WithCancel(ctx)
		defer func() { stopChaos(); <-chaosDone }()
		go func() { defer close(chaosDone); monkey.Run(cctx) }()
		if !*asJSON {
			fmt.Fprintf(e.stdout, "chaos: a random worker is killed, hung or slowed every %v\n", *chaosEvery)
		}
	} else {
		close(chaosDone)
	}
	res, err := load.Run(ctx, load.Config{
		Target: st.URL, Model: *model, SLO: spec, Payloads: payloads, Duration: *dur, MaxRequests: 1 << 22,
		Arrivals: arrivals,
		Policy:   *policy, Trace: traceName,
	})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	after, _ := st.Gateway.Stats(*model)
	s := res.Summary
	delta := gateway.Stats{Batches: after.Batches - before.Batches, Dispatched: after.Dispatched - before.Dispatched}
	s.MeanBatchSize = delta.MeanBatchSize() // exact, from the gateway
	workPerReq := 0.0
	if s.Completed > 0 {
		workPerReq = res.WorkSeconds / float64(s.Completed) * 1e6
	}
	s.Extra = map[string]float64{
		"worker_busy_s":          res.WorkSeconds,
		"work_us_per_request":    workPerReq,
		"batches":                float64(delta.Batches),
		"client_late_sends":      float64(res.Late),
		"offered_rps":            float64(s.Requests) / s.DurationS,
		"rejected_429":           float64(res.Codes[429]),
		"timed_out_504":          float64(res.Codes[504]),
		"backend_failed_502_503": float64(res.Codes[502] + res.Codes[503]),
		"no_answer":              float64(res.Codes[0]),
	}
	if monkey != nil {
		c := monkey.Counts()
		s.Extra["chaos_kills"] = float64(c[chaos.Kill])
		s.Extra["chaos_hangs"] = float64(c[chaos.Hang])
		s.Extra["chaos_slows"] = float64(c[chaos.Slow])
	}
	line := fillCost(&s, st, *model, m.InstanceType.Name, ctlBefore, loadStart)
	if *asJSON {
		return slo.WriteJSON(e.stdout, s)
	}
	if *ctlName != config.ControllerNone {
		fmt.Fprintln(e.stdout, "instances over time (# ready, + launching, - draining):")
		printTimeline(e.stdout, line, 2)
		printDecisions(e.stdout, line)
	}
	printSummary(e.stdout, s)
	return nil
}

// printSummary prints a Summary as a two-column table.
func printSummary(w io.Writer, s slo.Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "policy\t%s\n", s.Policy)
	fmt.Fprintf(tw, "trace\t%s (%.0f s)\n", s.Trace, s.DurationS)
	fmt.Fprintf(tw, "requests\t%d (completed %d, failed %d, rejected %d)\n", s.Requests, s.Completed, s.Failed, s.Rejected)
	fmt.Fprintf(tw, "slo\t%.0f ms for %.0f %% of requests\n", s.SLO.ThresholdMS, 100*s.SLO.Target)
	fmt.Fprintf(tw, "slo_attainment\t%.4f\n", s.SLOAttainment)
	fmt.Fprintf(tw, "latency_ms\tp50 %.2f  p95 %.2f  p99 %.2f  max %.2f\n", s.LatencyMS.P50, s.LatencyMS.P95, s.LatencyMS.P99, s.LatencyMS.Max)
	fmt.Fprintf(tw, "throughput_rps\t%.1f\n", s.ThroughputRPS)
	fmt.Fprintf(tw, "mean_batch_size\t%.2f\n", s.MeanBatchSize)
	if s.CostUSD.Total > 0 {
		fmt.Fprintf(tw, "cost_usd\t%.6f (instance hours %v, nominal local price)\n", s.CostUSD.Total, s.InstanceHours)
	}
	if s.Accuracy != nil {
		fmt.Fprintf(tw, "accuracy\t%.3f\n", *s.Accuracy)
	}
	if _, ok := s.Extra["chaos_kills"]; ok {
		fmt.Fprintf(tw, "chaos\t%.0f kills, %.0f hangs, %.0f slow periods; %.0f requests without an answer\n",
			s.Extra["chaos_kills"], s.Extra["chaos_hangs"], s.Extra["chaos_slows"], s.Extra["no_answer"])
	}
	if v, ok := s.Extra["work_us_per_request"]; ok {
		fmt.Fprintf(tw, "worker work per request\t%.1f µs (worker busy %.2f s in all)\n", v, s.Extra["worker_busy_s"])
	}
	tw.Flush()
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
