package controller

import (
	"fmt"
	"os"
	"time"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
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
// (per batch, each with m.Slots slots): the policy cfg.Controller.Policy names, built through
// the registry (policy.NewModel; policy.NewCluster for infless) exactly as the simulator builds
// it, in the live world LiveEnv describes, with cfg's bounds and m's instance type and price.
// A policy without a VM fleet (lambda) is refused; with serverless.enabled a policy's
// serverless tier and router are returned (Model.Serverless, Model.Route) for the gateway's
// function tier, else they are not used (the gateway admits and batches).
func NewModel(cfg config.Config, m config.Model, curve profile.Curve, start time.Time) (Model, error) {
	c := cfg.Controller
	it := m.InstanceType
	out := Model{Name: m.Name, Type: it.Name, PricePerHour: it.PricePerHour, MaxBatch: it.MaxBatch, Min: c.MinInstances, Max: c.MaxInstances}
	port, name, ok := config.PolicyName(c.Policy)
	if !ok {
		return Model{}, fmt.Errorf("controller.policy: unknown %q (have %v)", c.Policy, config.ControllerPolicies())
	}
	if port == policy.PortCluster {
		prof := INFlessProfileFromCurve(m.Name, curve, it.MaxBatch)
		spec := provider.Spec{Model: m.Name, Type: it.Name, Tier: provider.TierVM, MaxBatch: it.MaxBatch}
		ps, _ := policy.Lookup(port, name)
		o, ok := ps.Options().(*inflesspol.Options)
		if !ok {
			return Model{}, fmt.Errorf("controller.policy: %s places instances, but the live controller runs INFless's cluster policies only", name)
		}
		liveINFless(o, c.Unit, LiveCoolDown(c.Unit))
		if err := cfg.Policies.Decoder(name, nil)(o); err != nil {
			return Model{}, fmt.Errorf("controller %s: %w", m.Name, err)
		}
		if path := c.Cluster.OperatorStore; path != "" {
			cp, err := COPProfile(path, m.Name, it.MaxBatch)
			if err != nil {
				return Model{}, fmt.Errorf("controller %s: controller.cluster.operator_store: %w", m.Name, err)
			}
			prof = cp
			o.Prediction = inflesspol.PredictionCOP
			o.Predictor = func(profile.INFlessProfile) infless.Predictor { return infless.ProfilePredictor(cp) }
		}
		s, err := newINFless(name, spec, m.SLO.Spec().Threshold, prof, policy.DefaultRateWindow, *o)
		if err != nil {
			return Model{}, fmt.Errorf("controller %s: %w", m.Name, err)
		}
		out.Scaler = s
		return out, nil
	}
	env := LiveEnv(cfg, m, curve, start)
	pm, err := policy.NewModel(name, env)
	if err != nil {
		return Model{}, fmt.Errorf("controller %s: policy %s: %w", m.Name, name, err)
	}
	if pm.Scaler == nil {
		return Model{}, fmt.Errorf("controller %s: policy %s has no VM fleet to scale (it serves from a serverless tier, which the live providers lack)", m.Name, name)
	}
	out.Scaler = pm.Scaler
	withTiers(&out, pm)
	spec, _ := policy.Lookup(port, name)
	switch {
	case spec.Caps&policy.CapsConfiguredFleet != 0:
		out.Min, out.Max = 0, 0 // the configured count is the fleet
	case spec.Caps&policy.CapsScaleToZero != 0:
		// Its keep-alive may scale an idle model to zero (min_instances 0).
	default:
		out.Min = max(out.Min, 1)
	}
	if spec.Caps&policy.CapsBatchPerType != 0 {
		// A configured rate says nothing about batching gains: MArk's N_batch from LocalCurve
		// would cap batches at RT_max·rps/slots; the model's batching policy decides instead.
		out.PolicyBatch = it.RPS > 0 && it.MaxBatch == 0
	}
	if f, ok := out.Scaler.(forecaster); ok {
		out.Forecast = func() (float64, time.Duration, bool) {
			r := f.Forecast()
			if len(r) == 0 {
				return 0, 0, false
			}
			return r[0], f.Unit(), true
		}
	}
	return out, nil
}

// forecaster is a scaler that forecasts (MArk's, and sloserve's through it).
type forecaster interface {
	Forecast() []float64
	Unit() time.Duration
}

// COPProfile is the INFless profile COP predicts for model from the operator store at path
// (profile.COPStore.INFlessProfile): every thread count the store measured × batch sizes 1, 2,
// 4, … up to maxBatch (32, INFless §5.1's cap, when ≤ 0). The store must hold the model's
// operator graph (`sloserve profile --operators --store FILE --models` with the model).
func COPProfile(path, model string, maxBatch int) (profile.INFlessProfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return profile.INFlessProfile{}, err
	}
	defer f.Close()
	st, err := profile.ReadCOPStore(f)
	if err != nil {
		return profile.INFlessProfile{}, err
	}
	g, ok := st.Model(model)
	if !ok {
		return profile.INFlessProfile{}, fmt.Errorf("%s holds no operator graph of model %q (measure it with sloserve profile --operators --store FILE --models including it)", path, model)
	}
	if maxBatch <= 0 {
		maxBatch = inflesspol.DefaultMaxBatch
	}
	return st.INFlessProfile(g, maxBatch)
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
