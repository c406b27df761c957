package validate

import (
	"context"
	"log/slog"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
)

// bounded applies the live controller's bounds to a scaler's decisions (controller.Model.Bound),
// so that the simulator acts on what the live controller would act on.
type bounded struct {
	inner autoscale.Scaler
	m     controller.Model
}

func (b bounded) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	d := b.inner.Scale(s, now)
	d.Launch, d.Terminate = b.m.Bound(d, s.Fleet)
	return d
}

// traced logs every simulated step's facts and decision as the live controller logs its own
// ("controller step" at debug level, autoscale.StepAttrs), so that `sloserve validate -v`
// compares the two step by step.
type traced struct {
	inner autoscale.Scaler
	log   *slog.Logger
	model string
}

func (t traced) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	d := t.inner.Scale(s, now)
	t.log.Debug("sim step", append([]any{"model", t.model, "at", now}, autoscale.StepAttrs(s, d, len(d.Launch), len(d.Terminate))...)...)
	return d
}

// SimPolicy builds policy for the simulator as the live stack runs it on cfg's one model:
// through the registry in the live world (controller.LiveEnv, planning on the curve the
// controller plans with), the scaler wrapped in the controller's bounds, the configured fleet
// as the initial one, the gateway's batching and dispatcher on the VM queue. The returned
// catalog is the live world's with the launch delay set to launch.
func SimPolicy(cfg config.Config, m config.Model, launch time.Duration, sigma float64, start time.Time) (sim.Policy, policy.Env, error) {
	it := m.InstanceType
	plan, err := controller.LocalCurve(it.RPS, m.Slots, it.MaxBatch)
	if err != nil {
		return sim.Policy{}, policy.Env{}, err
	}
	env := controller.LiveEnv(cfg, m, plan, start)
	env.Catalog.Types[0].LaunchDelay.Median, env.Catalog.Types[0].LaunchDelay.Sigma = launch, sigma
	_, name, _ := config.PolicyName(cfg.Controller.Policy)
	pol, err := policy.NewModel(name, env)
	if err != nil {
		return sim.Policy{}, env, err
	}
	cm, err := controller.NewModel(cfg, m, plan, start)
	if err != nil {
		return sim.Policy{}, env, err
	}
	pol.Scaler = bounded{inner: pol.Scaler, m: cm}
	pol.Initial = nil
	for range m.Instances {
		pol.Initial = append(pol.Initial, provider.Spec{Model: m.Name, Type: it.Name, Tier: provider.TierVM})
	}
	if pol.Batching, err = batching.Builtin().New(m.Batching); err != nil {
		return sim.Policy{}, env, err
	}
	if pol.Dispatcher, err = dispatch.New(cfg.Gateway.Dispatch); err != nil {
		return sim.Policy{}, env, err
	}
	return pol, env, nil
}

// runSim replays r through the simulator under policy, with the measured curve as every batch's
// service time and the measured spread and launch delay.
func runSim(ctx context.Context, o Options, name string, prof Measured, r Replay) (slo.Summary, error) {
	cfg, m := policyConfig(o, name, r, prof)
	ld := prof.LaunchDelay()
	pol, env, err := SimPolicy(cfg, m, ld.Median, ld.Sigma, sim.DefaultEpoch)
	if err != nil {
		return slo.Summary{}, err
	}
	pol.Scaler = traced{inner: pol.Scaler, log: o.Log, model: m.Name}
	curve, err := prof.Curve()
	if err != nil {
		return slo.Summary{}, err
	}
	truth := profile.Model{Name: m.Name, VM: map[string]profile.Backend{m.InstanceType.Name: {Curve: curve, Slots: m.Slots}}}
	sc := sim.DefaultConfig()
	sc.SLO, sc.Seed, sc.NoiseCV, sc.SamplePeriod, sc.Trace = o.SLO, o.Seed, prof.NoiseCV, cfg.Controller.SampleInterval, r.Name
	sc.SeriesPeriod, sc.NoiseFactors, sc.LaunchNoiseFactors = 0, prof.Factors, prof.LaunchFactors
	// The host's stalls, measured by the profile's probe, pause the simulated host as a whole
	// (sim.Stalls); the round trips they slowed are out of the factors above.
	sc.Stalls = prof.Stalls.Sim()
	// The gateway gives each request its SLO threshold as its deadline and answers 504 past it
	// (internal/gateway core.go): a request waits in the simulated queue no longer.
	sc.RequestTimeout = o.SLO.Threshold
	res, err := sim.Run(ctx, sc, env.Catalog, truth, pol, source(r.Times))
	if err != nil {
		return slo.Summary{}, err
	}
	s := res.Summary
	s.Policy = name
	x := res.Summary.Extra
	s.Extra = map[string]float64{
		"instance_seconds": x["vm_instance_seconds"],
		"launches":         x["launches"] - float64(m.Instances),
		"terminations":     x["terminations"],
		"spills":           float64(s.ServedBy.Serverless),
		"rejected_429":     float64(s.Rejected),
		"timed_out_504":    x["timeouts"],
	}
	return s, nil
}
