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

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/chaos"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
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

// demoOptions are the demo's flags, validated: the served model and its batching, the load, the
// fleet controller and the faults to inject.
type demoOptions struct {
	asJSON, verbose bool
	policy          string        // batching policy: none, fixed or mlproxy
	rps             float64       // mean request rate of the Poisson phase (requests/s)
	dur             time.Duration // length of the load
	model           string        // bundled model to serve
	payloads        []load.Payload
	instances       int     // worker processes serving the model
	slots           int     // batches one worker takes at once
	sloMS           float64 // latency SLO threshold (ms), target 0.98
	ctlName         string  // fleet controller, config.ControllerNone for a static fleet
	workerRPS       float64 // nominal rate one worker serves (requests/s), for the controller
	serverless      bool    // the function tier (with --controller sloserve)
	chaos           bool    // inject faults during the load
	chaosCfg        chaos.Config
}

// demoRun is what the demo measured: the Summary and, with a controller, the instance timeline.
type demoRun struct {
	summary slo.Summary
	line    []controller.Point
}

// runDemo starts the gateway and local workers in-process, drives open-loop load (a Poisson
// phase, then a bursty MMPP(2) phase) and prints the Summary.
func runDemo(ctx context.Context, args []string, e env) error {
	o, err := parseDemoFlags(args)
	if err != nil {
		return err
	}
	progress, logw := e.stdout, io.Discard
	if o.asJSON {
		progress = io.Discard
	}
	if o.verbose {
		logw = e.stderr
	}
	r, err := driveDemo(ctx, o, progress, slog.New(slog.NewTextHandler(logw, nil)))
	if err != nil {
		return err
	}
	return printDemo(e.stdout, o, r)
}

// parseDemoFlags parses and validates the demo's flags; a bad one is a usage error naming it.
func parseDemoFlags(args []string) (demoOptions, error) {
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
	serverless := fs.Bool("serverless", true, "with --controller sloserve: the function tier (BATCH's buffer, Bouncer spill); false answers what the VM fleet cannot finish with 429")
	if err := parseFlags(fs, args); err != nil {
		return demoOptions{}, err
	}
	o := demoOptions{asJSON: *asJSON, verbose: *verbose, policy: *policy, rps: *rps, dur: *dur, model: *model,
		instances: *instances, slots: *slots, sloMS: *sloMS, ctlName: *ctlName, workerRPS: *workerRPS, chaos: *chaosOn,
		serverless: *serverless && *ctlName == config.ControllerSloserve}
	if err := o.validate(*chaosEvery); err != nil {
		return demoOptions{}, err
	}
	o.chaosCfg = chaos.DefaultConfig()
	o.chaosCfg.Every = *chaosEvery
	for _, k := range strings.Split(*chaosKinds, ",") {
		o.chaosCfg.Kinds = append(o.chaosCfg.Kinds, chaos.Kind(strings.TrimSpace(k)))
	}
	if err := o.chaosCfg.Validate(); err != nil {
		return demoOptions{}, usagef("demo: --chaos-kinds / --chaos-every: %v", err)
	}
	if o.chaos && !flagSet(fs, "instances") {
		o.instances = 3 // a fault then leaves two of three workers serving
	}
	var err error
	if o.payloads, err = samplePayloads(o.model, 1); err != nil {
		return demoOptions{}, usagef("demo: --model: %v", err)
	}
	if o.ctlName != config.ControllerNone && o.workerRPS == 0 {
		o.workerRPS = o.rps / 2
	}
	return o, nil
}

// validate checks the demo's numeric and named flags (chaosEvery is --chaos-every).
func (o demoOptions) validate(chaosEvery time.Duration) error {
	switch {
	case !slices.Contains([]string{batching.PolicyNone, batching.PolicyFixed, batching.PolicyMLProxy}, o.policy):
		return usagef("demo: --batching must be none, fixed or mlproxy, got %q", o.policy)
	case !(o.rps > 0) || o.rps > 5000:
		return usagef("demo: --rps must be in (0, 5000], got %v", o.rps)
	case o.dur < 3*time.Second || o.dur > time.Hour:
		return usagef("demo: --duration must be in [3s, 1h], got %v", o.dur)
	case o.instances < 1 || o.instances > 8:
		return usagef("demo: --instances must be in [1, 8], got %d", o.instances)
	case o.slots < 1 || o.slots > 64:
		return usagef("demo: --slots must be in [1, 64], got %d", o.slots)
	case !(o.sloMS > 0):
		return usagef("demo: --slo-ms must be > 0, got %v", o.sloMS)
	case !slices.Contains(config.ControllerPolicies(), o.ctlName):
		return usagef("demo: --controller must be one of %v, got %q", config.ControllerPolicies(), o.ctlName)
	case o.workerRPS < 0:
		return usagef("demo: --worker-rps must be ≥ 0, got %v", o.workerRPS)
	case chaosEvery < 100*time.Millisecond:
		return usagef("demo: --chaos-every must be ≥ 100ms, got %v", chaosEvery)
	}
	return nil
}

// demoConfig is the configuration the demo serves with: a gateway on a free local port, local
// workers, and the one model with its SLO, fleet and batching from o.
func demoConfig(o demoOptions) (config.Config, config.Model) {
	cfg := config.Default()
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Workers.Runtime, cfg.Workers.ONNXRuntimeLib = workerRuntime()
	cfg.Controller.Policy = o.ctlName
	m := config.DefaultModel(o.model)
	m.SLO = config.SLO{ThresholdMS: o.sloMS, Target: 0.98}
	m.Instances = o.instances
	m.Slots = o.slots
	m.Batching.Policy = o.policy
	m.Batching.SLO = m.SLO.Spec().Threshold
	m.Batching.MaxWait = min(m.Batching.MaxWait, m.Batching.SLO/4)
	if o.ctlName != config.ControllerNone {
		demoController(&cfg, &m, o.ctlName, o.workerRPS)
	}
	if o.ctlName == config.ControllerSloserve {
		demoTiers(&cfg, &m, o.serverless)
	}
	cfg.Models = []config.Model{m}
	return cfg, m
}

// driveDemo starts the stack, warms it up, drives the measured load (with faults under --chaos)
// and returns what it measured; progress lines go to progress.
func driveDemo(ctx context.Context, o demoOptions, progress io.Writer, log *slog.Logger) (demoRun, error) {
	cfg, m := demoConfig(o)
	fmt.Fprintf(progress, "starting %d %s worker(s) for %s (runtime %s), batching %s ...\n", o.instances, "sloserve", o.model, cfg.Workers.Runtime, o.policy)
	bv := readBuildVersion()
	st, err := app.Start(ctx, cfg, app.StackOptions{Logger: log, Build: gateway.BuildInfo{Version: bv.Version, Commit: bv.Commit, GoVersion: bv.GoVersion}})
	if err != nil {
		return demoRun{}, fmt.Errorf("demo: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st.Close(sctx)
	}()
	spec := m.SLO.Spec()
	// Warm-up: one second at a tenth of the rate, not recorded (connections, first batches).
	if _, err := load.Run(ctx, load.Config{Target: st.URL, Model: o.model, Arrivals: trace.Poisson(o.rps/10, demoSeed+1),
		Duration: time.Second, MaxRequests: 1 << 20, Payloads: o.payloads, SLO: spec}); err != nil {
		return demoRun{}, fmt.Errorf("demo: warm-up: %w", err)
	}
	before, _ := st.Gateway.Stats(o.model)
	ctlBefore, _ := st.Controller.View(o.model)
	fnBefore := functionFigures(st, o.model)
	loadStart := time.Now()
	arrivals, traceName, desc := demoArrivals(o, cfg.Controller)
	fmt.Fprint(progress, desc)
	monkey, stopChaos, err := startDemoChaos(ctx, o, st, progress, log)
	if err != nil {
		return demoRun{}, err
	}
	defer stopChaos()
	res, err := load.Run(ctx, load.Config{
		Target: st.URL, Model: o.model, SLO: spec, Payloads: o.payloads, Duration: o.dur, MaxRequests: 1 << 22,
		Arrivals: arrivals,
		Policy:   o.policy, Trace: traceName,
	})
	if err != nil {
		return demoRun{}, fmt.Errorf("demo: %w", err)
	}
	after, _ := st.Gateway.Stats(o.model)
	s := demoSummary(res, gateway.Stats{Batches: after.Batches - before.Batches, Dispatched: after.Dispatched - before.Dispatched}, monkey)
	line := fillCost(&s, st, o.model, m.InstanceType.Name, ctlBefore, loadStart)
	fillFunctions(&s, st, o.model, fnBefore)
	return demoRun{summary: s, line: line}, nil
}

// demoArrivals is the measured load, its trace name and the line describing it: a Poisson phase
// then a bursty MMPP(2) phase, or with a controller the calm → burst → calm ramp.
func demoArrivals(o demoOptions, ctl config.Controller) (arrivals trace.Source, traceName, desc string) {
	if o.ctlName != config.ControllerNone {
		arrivals, desc = demoRamp(o.rps, o.dur)
		desc = fmt.Sprintf("controller %s: workers of %.0f rps nominal, %d … %d instances\n", o.ctlName, o.workerRPS, ctl.MinInstances, ctl.MaxInstances) + desc
		return arrivals, "demo-calm+burst+calm", desc
	}
	poisson := o.dur * 2 / 3
	// MMPP(2): a calm phase at half the rate and a burst at 2.5×, switching every 2 s on average.
	burst := trace.MMPP2(0.5*o.rps, 2.5*o.rps, 0.5, 0.5)
	arrivals = load.Phases(
		load.Phase{Name: "poisson", Arrivals: trace.Poisson(o.rps, demoSeed), Duration: poisson},
		load.Phase{Name: "mmpp", Arrivals: burst.Arrivals(demoSeed), Duration: o.dur - poisson},
	)
	desc = fmt.Sprintf("load: %v Poisson at %.0f rps, then %v MMPP(2) switching between %.0f and %.0f rps ...\n",
		poisson.Round(time.Second), o.rps, (o.dur - poisson).Round(time.Second), 0.5*o.rps, 2.5*o.rps)
	return arrivals, "demo-poisson+mmpp", desc
}

// startDemoChaos starts the chaos monkey on the stack's worker processes under --chaos (else it
// returns a nil monkey); stop ends it and waits for it.
func startDemoChaos(ctx context.Context, o demoOptions, st *app.Stack, progress io.Writer, log *slog.Logger) (monkey *chaos.Monkey, stop func(), err error) {
	if !o.chaos {
		return nil, func() {}, nil
	}
	target, ok := st.Provider.(chaos.Target) // worker processes: the local provider
	if !ok {
		return nil, nil, fmt.Errorf("demo: --chaos needs local worker processes, the provider is %T", st.Provider)
	}
	if monkey, err = chaos.New(target, o.chaosCfg, log); err != nil {
		return nil, nil, fmt.Errorf("demo: %w", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); monkey.Run(cctx) }()
	fmt.Fprintf(progress, "chaos: a random worker is killed, hung or slowed every %v\n", o.chaosCfg.Every)
	return monkey, func() { cancel(); <-done }, nil
}

// demoSummary is the load's Summary with the exact mean batch size from the gateway's delta
// stats, the answers per status code and the faults injected (monkey may be nil) as extras.
func demoSummary(res load.Result, delta gateway.Stats, monkey *chaos.Monkey) slo.Summary {
	s := res.Summary
	s.MeanBatchSize = delta.MeanBatchSize() // exact, from the gateway
	workPerReq := 0.0
	if s.Completed > 0 {
		workPerReq = res.WorkSeconds / float64(s.Completed) * 1e6
	}
	s.Extra = map[string]float64{
		"worker_busy_s":                res.WorkSeconds,
		"work_us_per_request":          workPerReq,
		"batches":                      float64(delta.Batches),
		"client_late_sends":            float64(res.Late),
		"client_lateness_p50_ms":       ms(res.LateP50),
		"client_lateness_p99_ms":       ms(res.LateP99),
		"client_lateness_max_ms":       ms(res.LateMax),
		"slo_attainment_from_schedule": res.ScheduledAttainment,
		"wire_p99_ms":                  ms(res.WireP99),
		"offered_rps":                  float64(s.Requests) / s.DurationS,
		"rejected_429":                 float64(res.Codes[429]),
		"timed_out_504":                float64(res.Codes[504]),
		"backend_failed_502_503":       float64(res.Codes[502] + res.Codes[503]),
		"no_answer":                    float64(res.Codes[0]),
	}
	if monkey != nil {
		c := monkey.Counts()
		s.Extra["chaos_kills"] = float64(c[chaos.Kill])
		s.Extra["chaos_hangs"] = float64(c[chaos.Hang])
		s.Extra["chaos_slows"] = float64(c[chaos.Slow])
	}
	return s
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printDemo prints the demo's result: the Summary as JSON, or the instance timeline and scaling
// decisions (with a controller) and the Summary table.
func printDemo(w io.Writer, o demoOptions, r demoRun) error {
	if o.asJSON {
		return slo.WriteJSON(w, r.summary)
	}
	if o.ctlName != config.ControllerNone {
		fmt.Fprintln(w, "instances over time (# ready, + launching, - draining):")
		printTimeline(w, r.line, 2)
		printDecisions(w, r.line)
	}
	printSummary(w, r.summary)
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
	if v, ok := s.Extra["client_late_sends"]; ok {
		fmt.Fprintf(tw, "load generator\t%.0f sends late (lateness p99 %.1f ms, max %.1f ms; attainment counted from the schedule %.4f)\n",
			v, s.Extra["client_lateness_p99_ms"], s.Extra["client_lateness_max_ms"], s.Extra["slo_attainment_from_schedule"])
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
