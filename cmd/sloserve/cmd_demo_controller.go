package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider/local"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// The demo's controller settings: MArk's algorithm on a clock short enough to show a whole
// scale-up and scale-down in under a minute (units of 2 s, cool-down of two units).
const (
	demoCtlUnit     = 2 * time.Second
	demoCtlCoolDown = 4 * time.Second
	demoCtlMax      = 6
)

// demoController sets cfg's controller for the demo: policy name, the demo clock, and each
// worker's nominal capacity workerRPS (requests/s) so that the burst needs several workers.
func demoController(cfg *config.Config, m *config.Model, name string, workerRPS float64) {
	c := &cfg.Controller
	c.Policy = name
	c.SampleInterval = time.Second
	c.Unit = demoCtlUnit
	// The demo's cool-down (two units) and SLO window, in each policy's own options (the
	// live preset's are six units and 500 requests).
	cd := demoCtlCoolDown
	sections := map[string]string{
		"mark":      fmt.Sprintf("{cool_down: %v, slo_monitor: {window: 200}}", cd),
		"sloserve":  fmt.Sprintf("{mark: {cool_down: %v, slo_monitor: {window: 200}}}", cd),
		"sagemaker": fmt.Sprintf("{tracking: {scale_in_cooldown: %v}}", cd),
		"infless":   fmt.Sprintf("{scale_down_after: %v}", cd),
	}
	cfg.Policies = policy.Sections{}
	for k, v := range sections {
		_ = cfg.Policies.Set(k, v) // constant, well-formed mappings
	}
	c.MinInstances, c.MaxInstances = 1, max(demoCtlMax, m.Instances)
	m.InstanceType.RPS = workerRPS
	m.InstanceType.LaunchDelay = time.Second
	if name == config.ControllerINFless {
		// Room for demoCtlMax one-thread instances whatever this machine's cores: INFless places
		// instances on controller.cluster's servers, whose default is this machine (one server of
		// its threads), where a 2-core machine holds only two.
		c.Cluster = config.Cluster{Servers: 2, CPU: demoCtlMax / 2}
	}
}

// demoSloserveMax is the VM fleet's bound in the sloserve demo: two workers of 100 rps nominal
// against the burst's 300 rps, so that the burst is above the fleet's capacity and the Bouncer
// spills the excess to the function tier (or, without one, answers it 429).
const demoSloserveMax = 2

// demoTiers sets the sloserve demo's two tiers: every worker (VM or function) runs at the
// nominal speed the controller plans with — a batch of r rows takes at least r × slots /
// worker_rps (worker --min-row-time; the wait uses no CPU, so the shared 2-core machine is not
// what limits the fleet) — the VM fleet is bounded by demoSloserveMax, and the function tier is
// on unless serverless is false.
func demoTiers(cfg *config.Config, m *config.Model, serverless bool) {
	// One batch at a time per worker: a row takes 1 / worker_rps (10 ms at 100 rps), so that a
	// batch of a few rows fits the 200 ms SLO with room for the admission margin.
	m.Slots = 1
	row := time.Duration(float64(max(m.Slots, 1)) / m.InstanceType.RPS * float64(time.Second))
	cfg.Workers.Args = append(cfg.Workers.Args, "--min-row-time", row.String())
	cfg.Controller.MaxInstances = demoSloserveMax
	cfg.Serverless = config.Serverless{Enabled: serverless}
}

// fnFigures are the function tier's cumulative figures the demo reports as deltas.
type fnFigures struct {
	counts gateway.FunctionCounts
	stats  local.FunctionStats
	cost   slo.CostUSD
}

// functionFigures reads the function tier's counters (zero without one).
func functionFigures(st *app.Stack, model string) fnFigures {
	var f fnFigures
	f.counts, _ = st.Gateway.FunctionCounts(model)
	if st.Functions != nil {
		f.stats = st.Functions.Stats(model)
	}
	f.cost = st.Controller.CostUSD(model)
	return f
}

// fillFunctions sets the Summary's tiers: served_by (the function tier's answers), cost_usd by
// tier (the function tier billed per invocation, GB-s at 1 ms + per-request price), cold
// starts, and the tier's figures as extras.
func fillFunctions(s *slo.Summary, st *app.Stack, model string, before fnFigures) {
	if st.Functions == nil {
		return
	}
	after := functionFigures(st, model)
	served := after.counts.Served - before.counts.Served
	s.ServedBy = slo.ServedBy{VM: max(s.Completed-served, 0), Serverless: served}
	sl := after.cost.Serverless - before.cost.Serverless
	s.CostUSD.Serverless = sl
	s.CostUSD.Total = s.CostUSD.VM + sl
	a, b := after.stats, before.stats
	s.ColdStarts = a.ColdStarts - b.ColdStarts
	s.Extra["spilled_to_functions"] = float64(after.counts.Spilled - before.counts.Spilled)
	s.Extra["rejected_by_both_tiers"] = float64(after.counts.Rejected - before.counts.Rejected)
	s.Extra["rejected_by_router"] = float64(after.counts.RejectedByRouter - before.counts.RejectedByRouter)
	s.Extra["rejected_function_deadline"] = float64(after.counts.RejectedByDeadline - before.counts.RejectedByDeadline)
	s.Extra["rejected_function_full"] = float64(after.counts.RejectedFull - before.counts.RejectedFull)
	s.Extra["function_invocations"] = float64(a.Invocations - b.Invocations)
	s.Extra["function_billed_gb_s"] = a.BilledGBSeconds - b.BilledGBSeconds
	s.Extra["function_memory_mb"] = float64(a.MemoryMB)
	s.Extra["function_cold_starts_total"] = float64(a.ColdStarts)
	if a.ColdStarts > 0 {
		s.Extra["function_cold_start_ms_mean"] = 1000 * a.ColdStartSeconds / float64(a.ColdStarts)
	}
	s.Extra["function_cpu_cgroup"] = 0
	if st.Functions.Enforcement() == local.EnforceCgroup {
		s.Extra["function_cpu_cgroup"] = 1
	}
	plans := st.FunctionPlans(model)
	s.Extra["batch_plans"] = float64(len(plans))
	if n := len(plans); n > 0 {
		s.Extra["batch_B"] = float64(plans[n-1].Plan.MaxBatch)
		s.Extra["batch_T_ms"] = float64(plans[n-1].Plan.Timeout) / 1e6
	}
}

// demoRamp is the load the controller demo drives: calm at rps/4, a burst at 1.5 × rps, calm
// again, for a fifth, a third and the rest of dur (the longest: scaling down waits for the
// forecast to fall and for the cool-down).
func demoRamp(rps float64, dur time.Duration) (trace.Source, string) {
	calm, burst := dur/5, dur/3
	src := load.Phases(
		load.Phase{Name: "calm", Arrivals: trace.Poisson(rps/4, demoSeed), Duration: calm},
		load.Phase{Name: "burst", Arrivals: trace.Poisson(1.5*rps, demoSeed+2), Duration: burst},
		load.Phase{Name: "calm-again", Arrivals: trace.Poisson(rps/4, demoSeed+3), Duration: dur - calm - burst},
	)
	desc := fmt.Sprintf("load: %v Poisson at %.0f rps, %v at %.0f rps, %v at %.0f rps ...\n",
		calm.Round(time.Second), rps/4, burst.Round(time.Second), 1.5*rps, (dur - calm - burst).Round(time.Second), rps/4)
	return src, desc
}

// fillCost sets the Summary's instance hours and cost from the controller's accounting between
// two views (nominal price × instance-seconds for local workers) and the instance timeline
// extras.
func fillCost(s *slo.Summary, st *app.Stack, model, typ string, before controller.View, since time.Time) []controller.Point {
	after, _ := st.Controller.View(model)
	secs := after.InstanceSeconds - before.InstanceSeconds
	usd := after.CostUSD - before.CostUSD
	s.InstanceHours = map[string]float64{typ: secs / 3600}
	s.CostUSD = slo.CostUSD{Total: usd, VM: usd}
	var line []controller.Point
	for _, p := range st.Controller.Timeline(model) {
		if !p.At.Before(since) {
			line = append(line, p)
		}
	}
	if s.Extra == nil {
		s.Extra = map[string]float64{}
	}
	peak, low := 0, 1<<30
	for _, p := range line {
		peak = max(peak, p.Ready+p.Launching)
		low = min(low, p.Ready)
	}
	if len(line) > 0 {
		s.Extra["instances_peak"] = float64(peak)
		s.Extra["instances_end"] = float64(line[len(line)-1].Ready + line[len(line)-1].Launching)
		s.Extra["instances_min_ready"] = float64(low)
	}
	return line
}

// printTimeline prints the instances over time, one row per every-th sample.
func printTimeline(w io.Writer, line []controller.Point, every int) {
	if len(line) == 0 {
		return
	}
	t0 := line[0].At
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "t_s\tarrival_rps\tforecast_rps\tready\tlaunching\tdraining\tinstances\t")
	for i, p := range line {
		if i%every != 0 && i != len(line)-1 && p.Launched == 0 && p.Terminated == 0 {
			continue
		}
		bar := slices.Repeat([]byte("#"), p.Ready)
		bar = append(bar, slices.Repeat([]byte("+"), p.Launching)...)
		bar = append(bar, slices.Repeat([]byte("-"), p.Draining)...)
		fmt.Fprintf(tw, "%.0f\t%.0f\t%.0f\t%d\t%d\t%d\t%s\t\n", p.At.Sub(t0).Seconds(), p.ArrivalRate, p.Forecast, p.Ready, p.Launching, p.Draining, bar)
	}
	tw.Flush()
}

// printDecisions prints the controller's reason at every step that launched or terminated
// instances (with infless: each placement's ⟨b, c, g⟩ and server).
func printDecisions(w io.Writer, line []controller.Point) {
	if len(line) == 0 {
		return
	}
	fmt.Fprintln(w, "scaling decisions:")
	for _, p := range line {
		if p.Launched > 0 || p.Terminated > 0 {
			fmt.Fprintf(w, "  %5.1f s  +%d -%d  %s\n", p.At.Sub(line[0].At).Seconds(), p.Launched, p.Terminated, p.Reason)
		}
	}
}
