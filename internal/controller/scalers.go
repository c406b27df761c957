package controller

import (
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/autoscale/mark"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/forecast"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/planner"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slomon"
)

// LocalCurve is the service-time curve of one instance that sustains rps requests/s with slots
// batches at once when batching gains nothing: T_b = b · slots / rps up to maxBatch (64 when
// ≤ 0). A configured rate is all the controller knows, so it assumes no batching speed-up; MArk's
// rule (§4.3) then picks the largest batch that fits the budget, and μ* = rps.
func LocalCurve(rps float64, slots, maxBatch int) (profile.Curve, error) {
	if !(rps > 0) {
		return profile.Curve{}, fmt.Errorf("local curve: rps must be > 0, got %v", rps)
	}
	if maxBatch <= 0 {
		maxBatch = 64
	}
	t1 := time.Duration(float64(max(slots, 1)) / rps * float64(time.Second))
	pts := []profile.Point{{Batch: 1, Time: t1}}
	if maxBatch > 1 {
		pts = append(pts, profile.Point{Batch: maxBatch, Time: time.Duration(maxBatch) * t1})
	}
	return profile.NewCurve(pts)
}

// NewModel returns the controller's entry for a configured model whose instances serve curve
// (per batch, each with m.Slots slots): the scaler named by cfg.Policy, built from the same
// packages the simulator uses, with cfg's bounds and m's instance type and price.
func NewModel(cfg config.Controller, m config.Model, curve profile.Curve) (Model, error) {
	it := m.InstanceType
	spec := provider.Spec{Model: m.Name, Type: it.Name, Tier: provider.TierVM, MaxBatch: it.MaxBatch}
	out := Model{Name: m.Name, Type: it.Name, PricePerHour: it.PricePerHour, Min: cfg.MinInstances, Max: cfg.MaxInstances}
	slots := max(m.Slots, 1)
	// μ* without batching gains: the rate of full batches of the configured size, per instance.
	rate := 0.0
	if t := curve.ServiceTime(1); t > 0 {
		rate = float64(slots) / t.Seconds()
	}
	switch cfg.Policy {
	case config.ControllerNone:
		out.Scaler = &autoscale.Static{Spec: spec, Count: m.Instances}
		out.Min, out.Max = 0, 0
	case config.ControllerTargetTracking:
		// SageMaker's target: half an instance's capacity (MArk §5.1, 2× over-provisioning), as
		// invocations per instance per metric period.
		tc := autoscale.DefaultTargetTrackingConfig(spec, rate*cfg.Unit.Seconds()/autoscale.DefaultOverProvisioning)
		tc.Period, tc.ScaleOutCooldown, tc.ScaleInCooldown = cfg.Unit, cfg.Unit, cfg.CoolDown
		tc.Min, tc.Max = max(cfg.MinInstances, 1), cfg.MaxInstances
		s, err := autoscale.NewTargetTracking(tc)
		if err != nil {
			return Model{}, fmt.Errorf("controller %s: %w", m.Name, err)
		}
		out.Scaler = s
	case config.ControllerKnative:
		// Concurrency target: what one instance holds at half its capacity within the SLO (rate ×
		// threshold / 2), since behind the batching gateway a worker serves many requests at once.
		kc := autoscale.DefaultKPAConfig(spec)
		kc.Target = max(1, rate*m.SLO.Spec().Threshold.Seconds()/2)
		kc.Tick, kc.Min, kc.Max = cfg.SampleInterval, max(cfg.MinInstances, 1), cfg.MaxInstances
		s, err := autoscale.NewKPA(kc)
		if err != nil {
			return Model{}, fmt.Errorf("controller %s: %w", m.Name, err)
		}
		out.Scaler = s
	case config.ControllerMark, config.ControllerSloserve:
		ms, err := NewMark(cfg, m, curve)
		if err != nil {
			return Model{}, err
		}
		out.Scaler = ms
		// A configured rate says nothing about batching gains: MArk's N_batch from LocalCurve
		// would cap batches at RT_max·rps/slots; the model's batching policy decides instead.
		out.PolicyBatch = it.RPS > 0 && it.MaxBatch == 0
		out.Forecast = func() (float64, time.Duration, bool) {
			r := ms.Forecast()
			if len(r) == 0 {
				return 0, 0, false
			}
			return r[0], ms.Unit(), true
		}
		if cfg.Policy == config.ControllerSloserve {
			ka, err := keepalive.NewLSTH(LiveLSTHConfig(cfg.Unit))
			if err != nil {
				return Model{}, fmt.Errorf("controller %s: %w", m.Name, err)
			}
			out.Scaler = &Sloserve{Mark: ms, KeepAlive: ka, Spec: spec, Lead: it.LaunchDelay}
		}
	case config.ControllerINFless:
		prof := INFlessProfileFromCurve(m.Name, curve, it.MaxBatch)
		s, err := NewINFless(spec, m.SLO.Spec().Threshold, prof, policy.DefaultRateWindow, INFlessLiveOptions(cfg.Unit, cfg.CoolDown))
		if err != nil {
			return Model{}, fmt.Errorf("controller %s: %w", m.Name, err)
		}
		out.Scaler = s
	default:
		return Model{}, fmt.Errorf("controller.policy: unknown %q", cfg.Policy)
	}
	if cfg.Policy != config.ControllerSloserve && cfg.Policy != config.ControllerNone && cfg.Policy != config.ControllerINFless {
		out.Min = max(out.Min, 1) // only sloserve's and INFless's keep-alive scale a model to zero
	}
	return out, nil
}

// INFlessThreads is the CPU threads of the configurations INFlessProfileFromCurve describes: the
// curve was measured on a worker with one intra-op thread (the worker's default).
const INFlessThreads = 1

// INFlessProfileFromCurve is a model's INFless profile (latency per ⟨b, c, g⟩) from its measured
// service-time curve: one thread, no GPU (a local worker has none), batch sizes 1, 2, 4, … up to
// maxBatch (the curve's largest measured batch when ≤ 0), each at the curve's time. INFless
// measures a grid of threads × SM shares × batch sizes per model (§3.3); a live local worker is
// profiled once, on the thread count it runs with, so Alg. 1 chooses batch sizes and servers
// but not thread counts.
func INFlessProfileFromCurve(model string, curve profile.Curve, maxBatch int) profile.INFlessProfile {
	if maxBatch <= 0 {
		maxBatch = max(curve.MaxMeasured(), 1)
	}
	p := profile.INFlessProfile{Model: model}
	for b := 1; b <= maxBatch; b *= 2 {
		if t := curve.ServiceTime(b); t > 0 {
			p.Points = append(p.Points, profile.INFlessPoint{CPU: INFlessThreads, Batch: b, Latency: t})
		}
	}
	return p
}

// LiveLSTHConfig is INFless's LSTH (keepalive.DefaultLSTHConfig) on the live controller's
// clock: the live loop runs MArk with planning units of unit instead of one minute, and LSTH's
// one-minute bins, 4 h range and fallback and 24 h / 1 h windows are scaled by the same factor
// (unit / 1 min; with the default 5 s unit: 5 s bins, 20 min fallback keep-alive, a 5.5 s
// linger, 2 h and 5 min windows). Percentiles, margins and γ are the paper's.
func LiveLSTHConfig(unit time.Duration) keepalive.LSTHConfig {
	c := keepalive.DefaultLSTHConfig()
	k := float64(unit) / float64(time.Minute)
	scale := func(d time.Duration) time.Duration { return max(time.Duration(float64(d)*k), time.Millisecond) }
	c.BinWidth, c.Range, c.Fallback = scale(c.BinWidth), scale(c.Range), scale(c.Fallback)
	c.Long, c.Short = scale(c.Long), scale(c.Short)
	return c
}

// NewMark returns MArk's scaler (internal/autoscale/mark, the simulator's mark policy's scaler)
// for one model served by instances of m.InstanceType with the given curve: a one-type catalog
// at the type's price and launch delay, batching tuned by §4.3 within cfg.BatchBudget of the SLO
// threshold, the arrival monitor and planner on cfg's clock, and the SLO monitor over the last
// cfg.SLOWindow requests.
func NewMark(cfg config.Controller, m config.Model, curve profile.Curve) (*mark.Scaler, error) {
	it := m.InstanceType
	cat := cost.Catalog{Types: []cost.InstanceType{{Name: it.Name, Kind: cost.KindVM, VCPU: 1,
		PricePerHour: it.PricePerHour, LaunchDelay: cost.Delay{Median: it.LaunchDelay}}}}
	pm := profile.Model{Name: m.Name, VM: map[string]profile.Backend{it.Name: {Curve: curve, Slots: max(m.Slots, 1)}}}
	sl := m.SLO.Spec()
	cand, err := mark.Tune(&cat, pm, []string{it.Name}, time.Duration(float64(sl.Threshold)*cfg.BatchBudget), false)
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", m.Name, err)
	}
	if it.MaxBatch > 0 {
		for i := range cand.Types {
			cand.Types[i].MaxBatch = min(max(cand.Types[i].MaxBatch, 1), it.MaxBatch)
		}
	}
	mc := forecast.MonitorConfig{SampleInterval: cfg.SampleInterval, Unit: cfg.Unit, Window: cfg.Window,
		MaxHistory: max(cfg.Window, forecast.DefaultMaxHistory)}
	fo := forecast.DefaultOptions()
	fo.Horizon = cfg.Window
	fc, err := forecast.New(cfg.Forecaster, fo)
	if err != nil {
		return nil, fmt.Errorf("controller.forecaster: %w", err)
	}
	pc := planner.MarkConfig{Lookahead: cfg.Lookahead, Headroom: cfg.Headroom, CoolDown: cfg.CoolDown, MaxInstances: cfg.MaxInstances}
	// The SLO monitor's quiet period after a reactive launch: two planning units, time for the
	// launched worker to be ready and show its effect.
	sc := slomon.Config{Window: cfg.SLOWindow, Target: sl.Target, Launch: slomon.DefaultLaunch, Type: it.Name, CoolDown: 2 * cfg.Unit}
	s, err := mark.New(mark.Config{Model: m.Name, Candidates: cand, Planner: pc, Monitor: mc, Forecaster: fc,
		TrainStepsPerUnit: 20, SLOMonitor: sc, Spot: planner.DefaultSpotConfig(), Bouncer: admission.DefaultConfig()})
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", m.Name, err)
	}
	return s, nil
}
