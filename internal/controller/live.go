package controller

import (
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/policy/fixed"
	"github.com/sloserve/sloserve/internal/policy/knative"
	"github.com/sloserve/sloserve/internal/policy/mark"
	"github.com/sloserve/sloserve/internal/policy/mlproxy"
	"github.com/sloserve/sloserve/internal/policy/sagemaker"
	"github.com/sloserve/sloserve/internal/policy/sloserve"
	"github.com/sloserve/sloserve/internal/profile"
)

// The live world and its preset. A policy is built live from the same registry, the same
// Options schema and the same defaults as in the simulator; what differs is the world:
//
//   - facts: a catalog of one VM type (the model's instance_type: its price, launch delay and
//     one vCPU), the model's measured (or configured) service curve on it, and — with
//     serverless.enabled — the catalog's Lambda tier (prices, 1 ms granularity) with the
//     function profile FunctionProfile derives from that curve (else no serverless tier);
//     no trace statistics (Load is zero: the live controller cannot know the future's mean);
//   - the clock: local workers start in seconds, not minutes, so the live loop runs the
//     papers' algorithms on a shorter clock. controller.unit stands for the papers' one
//     minute, and the preset derives each policy's time parameters from it (Preset);
//   - the config's policies.<name> section, decoded over the preset, in the same schema as a
//     sim config's.

// Live preset constants, in planning units (controller.unit, default 5 s).
const (
	// LiveWindow is MArk's P_w on the live clock: one minute of units (12 at 5 s).
	LiveWindow = time.Minute
	// LiveCoolDownUnits is the surplus time before a termination, in units: MArk's six plans
	// (30 s at 5 s); also target tracking's scale-in cool-down and INFless's case (iii) hold
	// (INFless: 3 inactive ticks of 10 s).
	LiveCoolDownUnits = 6
	// LiveSLOWindow is M of MArk's SLO monitor, in requests (MArk: 1000 at cloud rates; a live
	// demo sees a few hundred requests per second).
	LiveSLOWindow = 500
)

// The sloserve policy's serverless tier on the live clock, in units: BATCH's re-fit window
// and period (the paper's hour: a re-fit sees LiveRefitWindowUnits units of arrivals and runs
// every LiveRefitPeriodUnits, so that a short live run sees several) and the tier dwell (15 min).
const (
	LiveRefitWindowUnits = 30
	LiveRefitPeriodUnits = 3
	LiveTierDwellUnits   = 15
	// LiveMaxBatch is B_max of the live function tier's buffer.
	LiveMaxBatch = 16
)

// FunctionProfile is the function tier's profile for a model whose VM worker (one vCPU) serves
// curve: at memory m the CPU share is m / FullVCPUMemoryMB, and a batch's time is the VM's
// divided by the share below one vCPU (the duty-cycle or cpu.max throttle) and the VM's above
// it (the worker's extra threads are not assumed to speed a measured curve up).
func FunctionProfile(curve profile.Curve, tier cost.Serverless, memories []int) profile.MemoryTable {
	t := profile.MemoryTable{}
	for _, m := range memories {
		share := min(tier.CPUShare(m), 1)
		if share <= 0 {
			continue
		}
		t[m] = curve.Scaled(1 / share)
	}
	return t
}

// LiveCoolDown is LiveCoolDownUnits units.
func LiveCoolDown(unit time.Duration) time.Duration { return LiveCoolDownUnits * unit }

// LiveEnv is the world a model policy is built in live: one VM type, the model's curve, its SLO,
// start, and options decoded as Preset, then cfg.Policies' section of the policy.
func LiveEnv(cfg config.Config, m config.Model, curve profile.Curve, start time.Time) policy.Env {
	it := m.InstanceType
	cat := cost.Catalog{Types: []cost.InstanceType{{Name: it.Name, Kind: cost.KindVM, VCPU: 1,
		PricePerHour: it.PricePerHour, LaunchDelay: cost.Delay{Median: it.LaunchDelay}}}}
	be := profile.Backend{Curve: curve, Slots: max(m.Slots, 1)}
	pm := profile.Model{Name: m.Name, VM: map[string]profile.Backend{it.Name: be}}
	if base, _ := cost.ParseType(it.Name); base != it.Name {
		// A spot type ("c5.large/spot") runs on its base type's machine: policies that look the
		// curve up by the base name (fixed, sagemaker) find it there too.
		pm.VM[base] = be
	}
	if cfg.Serverless.Enabled {
		cat.Serverless = cost.DefaultCatalog().Serverless
		pm.Serverless = FunctionProfile(curve, cat.Serverless, cfg.Serverless.Memories())
	}
	_, name, _ := config.PolicyName(cfg.Controller.Policy)
	user := cfg.Policies.Decoder(name, nil)
	preset := Preset(cfg.Controller, m, curve)
	return policy.Env{Catalog: &cat, Model: pm, SLO: m.SLO.Spec(), Start: start, Decode: func(v any) error {
		preset(v)
		return user(v)
	}}
}

// Preset returns the live preset: it sets, on a policy's options, the fields the live world
// decides — the live clock's time parameters, the instance type, the controller's bounds, and
// what a configured model says (instances for fixed) — leaving every other default the
// policy's own. Unknown option types are left as they are.
func Preset(c config.Controller, m config.Model, curve profile.Curve) func(v any) {
	it := m.InstanceType
	unit := c.Unit
	rate := 0.0 // μ* without batching gains, per instance
	if t := curve.ServiceTime(1); t > 0 {
		rate = float64(max(m.Slots, 1)) / t.Seconds()
	}
	markPreset := func(o *mark.Options) {
		o.SampleInterval, o.Unit, o.Window = c.SampleInterval, unit, max(1, int(LiveWindow/unit))
		o.Lookahead, o.CoolDown, o.MaxInstances = unit, LiveCoolDown(unit), c.MaxInstances
		o.Types = []string{it.Name}
		o.SLOMonitor.Window, o.SLOMonitor.Type = LiveSLOWindow, it.Name
		// The SLO monitor's quiet period after a reactive launch: two planning units, time for
		// the launched worker to be ready and show its effect.
		o.SLOMonitor.CoolDown = 2 * unit
	}
	kpaPreset := func(k *autoscale.KPAConfig) {
		// Concurrency target: what one instance holds at half its capacity within the SLO
		// (rate × threshold / 2), since behind the batching gateway a worker serves many
		// requests at once.
		k.Target = max(1, rate*m.SLO.Spec().Threshold.Seconds()/2)
		k.Tick, k.Min, k.Max = c.SampleInterval, max(c.MinInstances, 1), c.MaxInstances
	}
	return func(v any) {
		switch o := v.(type) {
		case *mark.Options:
			markPreset(o)
		case *sloserve.Options:
			markPreset(&o.Mark)
			o.MinInstances, o.KeepAliveUnit = c.MinInstances, unit
			// BATCH's online re-fit (§VI-D) and the tier dwell on the live clock: the papers'
			// hour-long window and period and 15-minute dwell in units of a minute.
			o.TierDwell = LiveTierDwellUnits * unit
			o.Serverless.Window, o.Serverless.Period, o.Serverless.Retry = LiveRefitWindowUnits*unit, LiveRefitPeriodUnits*unit, 2*unit
			// A re-fit runs on the function tier's batcher goroutine: its search is bounded
			// to B ≤ LiveMaxBatch and timeouts up to half the SLO in twentieths of it, about a
			// tenth of the simulator's grid (B ≤ 32, 10 ms … 490 ms), so that a re-fit on a
			// loaded machine holds the buffer for a fraction of a second, not seconds.
			// BATCH's own plan as the reference floor is solved again at every re-fit on
			// BATCH's 10 ms grid: 2.2 s a re-fit against 0.11 s without, measured on this
			// machine under load, so the live preset re-fits without it (set
			// policies.sloserve.serverless.reference: batch to have it).
			o.Serverless.Reference = sloserve.ReferenceNone
			slo := m.SLO.Spec().Threshold
			o.Serverless.MaxBatch = min(o.Serverless.MaxBatch, LiveMaxBatch)
			o.Serverless.TimeoutStep = max(o.Serverless.TimeoutStep, slo/20)
			o.Serverless.TimeoutMax = max(o.Serverless.TimeoutStep, min(o.Serverless.TimeoutMax, slo/2))
		case *fixed.Options:
			o.Type, o.Count = it.Name, m.Instances
		case *sagemaker.Options:
			// SageMaker's target: half an instance's capacity (MArk §5.1), per metric period.
			o.Type, o.Pricing = it.Name, sagemaker.PricingEC2
			o.Tracking.Period, o.Tracking.ScaleOutCooldown, o.Tracking.ScaleInCooldown = unit, unit, LiveCoolDown(unit)
			o.Tracking.Min, o.Tracking.Max = max(c.MinInstances, 1), c.MaxInstances
		case *knative.Options:
			o.Type = it.Name
			kpaPreset(&o.KPA)
		case *mlproxy.Options:
			o.Type = it.Name
			kpaPreset(&o.KPA)
		}
	}
}
