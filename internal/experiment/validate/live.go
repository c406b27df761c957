package validate

import (
	"context"
	"maps"
	"time"

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/slo"
	bundled "github.com/sloserve/sloserve/models"
)

// baseConfig is the stack both sides are configured from: a gateway on a free loopback port,
// local workers, and the one model with its SLO, one slot per worker, the model's default
// batching bounded by the SLO, and the nominal worker rate.
func baseConfig(o Options) config.Config {
	cfg := config.Default()
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Workers.Binary, cfg.Workers.Runtime, cfg.Workers.ONNXRuntimeLib = o.WorkerBinary, o.Runtime, o.ORTLib
	m := config.DefaultModel(o.Model)
	m.SLO = config.SLO{ThresholdMS: float64(o.SLO.Threshold) / float64(time.Millisecond), Target: o.SLO.Target}
	m.Instances, m.Slots = 1, 1
	m.Batching.SLO = o.SLO.Threshold
	m.Batching.MaxWait = min(m.Batching.MaxWait, o.SLO.Threshold/4)
	m.InstanceType.RPS = o.WorkerRPS
	cfg.Models = []config.Model{m}
	return cfg
}

// policyConfig is the configuration of one run of policy on r: the controller on the replay's
// clock (sample interval 1 s, unit the compressed minute), bounds [1, MaxInstances], and the
// measured launch delay as the instance type's.
func policyConfig(o Options, policy string, r Replay, prof Measured) (config.Config, config.Model) {
	cfg := baseConfig(o)
	c := &cfg.Controller
	c.Policy, c.SampleInterval, c.Unit = policy, time.Second, r.Unit
	c.MinInstances, c.MaxInstances = 1, o.MaxInstances
	m := &cfg.Models[0]
	m.InstanceType.LaunchDelay = prof.LaunchDelay().Median
	return cfg, *m
}

// closeStack stops a stack within 10 s.
func closeStack(st *app.Stack) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st.Close(ctx)
}

// runLive replays r through the live stack under policy and returns its Summary: the load
// generator's (latencies, attainment, answers) with the controller's instance time over the
// load; and the host's stalls, measured by the stall probe beside the replay.
func runLive(ctx context.Context, o Options, policy string, prof Measured, r Replay) (slo.Summary, StallsMeasured, error) {
	var stalls StallsMeasured
	cfg, m := policyConfig(o, policy, r, prof)
	set, err := bundled.Sample()
	if err != nil {
		return slo.Summary{}, stalls, err
	}
	input, err := inputName(o.Model)
	if err != nil {
		return slo.Summary{}, stalls, err
	}
	pays, err := load.ImagePayloads(set, input, set.Len())
	if err != nil {
		return slo.Summary{}, stalls, err
	}
	st, err := app.Start(ctx, cfg, app.StackOptions{Logger: o.Log, Env: o.WorkerEnv})
	if err != nil {
		return slo.Summary{}, stalls, err
	}
	defer closeStack(st)
	probe := startProbe()
	start := time.Now()
	res, err := load.Run(ctx, load.Config{Target: st.URL, Model: o.Model, SLO: o.SLO, Payloads: pays,
		Duration: r.Wall + time.Second, MaxRequests: len(r.Times) + 1, Arrivals: source(r.Times),
		Policy: policy, Trace: r.Name})
	stalls = stallsOf(probe.finish())
	if err != nil {
		return slo.Summary{}, stalls, err
	}
	end := time.Now()
	s := res.Summary
	secs, launches, terms := fleetTime(st.Controller.Timeline(o.Model), start, end)
	s.InstanceHours = map[string]float64{m.InstanceType.Name: secs / 3600}
	usd := secs * m.InstanceType.PricePerHour / 3600
	s.CostUSD = slo.CostUSD{Total: usd, VM: usd}
	s.Extra = map[string]float64{
		"instance_seconds":             secs,
		"launches":                     float64(launches),
		"terminations":                 float64(terms),
		"spills":                       float64(s.ServedBy.Serverless),
		"rejected_429":                 float64(res.Codes[429]),
		"timed_out_504":                float64(res.Codes[504]),
		"client_late":                  float64(res.Late),
		"client_lateness_p99_ms":       float64(res.LateP99.Microseconds()) / 1000,
		"slo_attainment_from_schedule": res.ScheduledAttainment,
	}
	maps.Copy(s.Extra, gatewayMeans(st, o.Model))
	return s, stalls, nil
}

// fleetTime integrates the controller's timeline over [from, to]: instance-seconds (launching,
// ready and draining instances, as the controller bills them), and the launches and
// terminations decided within it.
func fleetTime(line []controller.Point, from, to time.Time) (secs float64, launches, terms int) {
	for i, p := range line {
		next := to
		if i+1 < len(line) {
			next = line[i+1].At
		}
		a, b := maxTime(p.At, from), minTime(next, to)
		if b.After(a) {
			secs += float64(p.Launching+p.Ready+p.Draining) * b.Sub(a).Seconds()
		}
		if !p.At.Before(from) && !p.At.After(to) {
			launches += p.Launched
			terms += p.Terminated
		}
	}
	if len(line) > 0 && line[0].At.After(from) {
		// Before the first point the fleet is the configured one (one instance).
		secs += minTime(line[0].At, to).Sub(from).Seconds()
	}
	return secs, launches, terms
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// gatewayMeans reads the gateway's per-model histograms from the stack's registry and returns
// their means in ms, keyed for a Summary's Extra: the gateway's request duration, the queue
// wait and the batch round trip to the worker (what the simulator's service time stands for).
func gatewayMeans(st *app.Stack, model string) map[string]float64 {
	out := map[string]float64{}
	mfs, err := st.Registry.Gather()
	if err != nil {
		return out
	}
	names := map[string]string{"sloserve_request_duration_seconds": "gateway_ms_mean",
		"sloserve_queue_wait_seconds": "queue_wait_ms_mean", "sloserve_backend_seconds": "backend_ms_mean"}
	for _, mf := range mfs {
		key, ok := names[mf.GetName()]
		if !ok {
			continue
		}
		var sum float64
		var n uint64
		for _, m := range mf.GetMetric() {
			match := false
			for _, l := range m.GetLabel() {
				match = match || l.GetName() == "model" && l.GetValue() == model
			}
			if h := m.GetHistogram(); match && h != nil {
				sum += h.GetSampleSum()
				n += h.GetSampleCount()
			}
		}
		if n > 0 {
			out[key] = 1e3 * sum / float64(n)
		}
	}
	return out
}
