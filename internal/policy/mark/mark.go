package mark

import (
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/policy"

	"github.com/sloserve/sloserve/internal/admission"
	markscale "github.com/sloserve/sloserve/internal/autoscale/mark"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/forecast"
	"github.com/sloserve/sloserve/internal/planner"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slomon"
)

// This file is the MArk policy (MArk §4): arrival monitor → forecaster → greedy planner (Alg. 1)
// over every profiled instance type, the Bouncer spilling requests the fleet cannot finish in time
// to the serverless tier, the SLO monitor's reactive launches, and spot interruptions covered by
// burstable standbys (§4.5). Every decision is made by the pure pieces in internal/forecast,
// internal/planner, internal/admission and internal/slomon; this file only wires them.

func init() {
	policy.Register(policy.Spec{Name: "mark", Port: policy.PortModel, Caps: policy.CapsBatchPerType, Doc: "MArk: predictive greedy planner over the catalog (Alg. 1), Bouncer spill to serverless, SLO monitor, spot with burstable standbys (MArk §4)", New: policy.ModelFactory(New)})
}

// Options configures the mark policy (policies.mark in a sim config).
type Options struct {
	// Forecaster is the forecasting method (forecast.Methods()); default ewma — the backtest's
	// best cheap method on the Twitter trace; lstm trains TrainStepsPerUnit steps every unit.
	Forecaster string `yaml:"forecaster"`
	// ForecastModel is a pre-trained LSTM file (`sloserve forecast train --out`; relative to
	// the config file): the forecaster starts from it instead of an untrained net, as MArk's
	// predictor is trained offline on history (§4.2). It implies forecaster lstm.
	ForecastModel string `yaml:"forecast_model"`
	// TrainStepsPerUnit is how many LSTM steps run at every completed unit (0: 20).
	TrainStepsPerUnit int `yaml:"train_steps_per_unit"`
	// Spot adds every type's spot market variant ("<type>/spot") to the candidates (MArk-spot).
	Spot bool `yaml:"spot"`
	// Types restricts the candidate types (default: every type the model has a profile for).
	Types []string `yaml:"types"`
	// Headroom, Lookahead and CoolDown override the planner's (1, 5 min, 2 min; MArk §4.2–§4.3,
	// planner.DefaultHeadroom and DefaultCoolDown say why; the original used 1.2 and 6 min).
	Headroom  float64       `yaml:"headroom"`
	Lookahead time.Duration `yaml:"lookahead"`
	CoolDown  time.Duration `yaml:"cool_down"`
	// BatchBudget is the fraction of RT_max given to the batching rule (W_batch + T_b), leaving
	// the rest for queueing (default 0.5, as the fixed policy).
	BatchBudget float64 `yaml:"batch_budget"`
	// SLOMonitor configures the SLO monitor (window M, target SL_min, launch L, type T, cool-down);
	// fields left out keep slomon's defaults, the target defaults to the run's SLO target, and the
	// type falls back to the model's cheapest on-demand type when it is not profiled.
	SLOMonitor slomon.Config `yaml:"slo_monitor"`
	// Standby is the type resumed on a spot interruption (default: a burstable type the model
	// is profiled on, else the cheapest on-demand type).
	Standby string `yaml:"standby"`
	// MemoryMB is the serverless function memory (default 3008 MB, MArk's Lambda setting).
	MemoryMB int `yaml:"memory_mb"`
	// SampleInterval, Unit and Window are the arrival monitor's P_s, P_u and P_w (MArk §4.2;
	// default 5 s, 1 min and 60 units: forecast.DefaultMonitorConfig). The live controller runs
	// the same algorithm on a shorter clock (docs/config.md, "The live preset").
	SampleInterval time.Duration `yaml:"sample_interval"`
	Unit           time.Duration `yaml:"unit"`
	Window         int           `yaml:"window"`
	// MaxInstances bounds one plan's instances (default planner.DefaultMaxInstances).
	MaxInstances int `yaml:"max_instances"`
}

// ResolvePaths makes ForecastModel relative to the config file.
func (o *Options) ResolvePaths(resolve func(string) string) {
	o.ForecastModel = resolve(o.ForecastModel)
}

// Policy is the MArk scaler (internal/autoscale/mark, the same object the live controller
// drives) plus the Bouncer's router (Route); both are called from one goroutine. The sloserve
// policy composes it, reading the scaler's types, unit, monitor and forecaster.
type Policy struct {
	*markscale.Scaler
}

func New(env policy.Env) (policy.Model, error) { return NewWith(env, nil) }

// NewWith is New with the forecaster fc instead of the configured one when fc is not nil
// (tests give a forecast that is wrong on purpose).
func NewWith(env policy.Env, fc forecast.Forecaster) (policy.Model, error) {
	o := DefaultOptions(env)
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	return newWith(env, o, fc)
}

// DefaultOptions returns the mark policy's defaults for env (the Options doc says why each).
func DefaultOptions(env policy.Env) Options {
	mc := forecast.DefaultMonitorConfig()
	o := Options{Forecaster: "ewma", TrainStepsPerUnit: 20, Headroom: planner.DefaultHeadroom,
		Lookahead: planner.DefaultLookahead, CoolDown: planner.DefaultCoolDown, BatchBudget: 0.5, MemoryMB: policy.DefaultLambdaMemoryMB,
		SLOMonitor: slomon.DefaultConfig(), SampleInterval: mc.SampleInterval, Unit: mc.Unit, Window: mc.Window,
		MaxInstances: planner.DefaultMaxInstances}
	o.SLOMonitor.Target = env.SLO.Target
	return o
}

// NewOptions is New with options o already decoded (the sloserve policy composes mark this way).
func NewOptions(env policy.Env, o Options) (policy.Model, error) { return newWith(env, o, nil) }

func newWith(env policy.Env, o Options, fc forecast.Forecaster) (policy.Model, error) {
	if !(o.BatchBudget > 0 && o.BatchBudget <= 1) {
		return policy.Model{}, fmt.Errorf("mark.batch_budget: must be in (0, 1], got %v", o.BatchBudget)
	}
	if o.MemoryMB <= 0 {
		return policy.Model{}, fmt.Errorf("mark.memory_mb: must be > 0, got %d", o.MemoryMB)
	}
	if env.Catalog == nil {
		c := cost.DefaultCatalog()
		env.Catalog = &c
	}
	pc := planner.DefaultMarkConfig()
	pc.Headroom, pc.Lookahead, pc.CoolDown = o.Headroom, o.Lookahead, o.CoolDown
	if o.MaxInstances > 0 {
		pc.MaxInstances = o.MaxInstances
	}
	mc := forecast.MonitorConfig{SampleInterval: o.SampleInterval, Unit: o.Unit, Window: o.Window,
		MaxHistory: max(o.Window, forecast.DefaultMaxHistory)}
	if err := mc.Validate(); err != nil {
		return policy.Model{}, fmt.Errorf("mark.sample_interval/unit/window: %w", err)
	}

	// Catalog view: every profiled type, batching tuned by MArk §4.3 (batching.TuneFixed), μ* × slots.
	rt := time.Duration(float64(env.SLO.Threshold) * o.BatchBudget)
	cand, err := markscale.Tune(env.Catalog, env.Model, o.Types, rt, o.Spot)
	if err != nil {
		return policy.Model{}, fmt.Errorf("mark.types: %w", err)
	}
	if _, ok := cand.Cheapest(); !ok {
		return policy.Model{}, fmt.Errorf("mark: %w (model %s, RT_max budget %v)", planner.ErrNoFeasibleType, env.Model.Name, rt)
	}
	if fc == nil {
		fo := forecast.DefaultOptions()
		if o.ForecastModel != "" {
			if o.Forecaster != "lstm" && o.Forecaster != "ewma" {
				return policy.Model{}, fmt.Errorf("mark.forecast_model: a pre-trained LSTM, but forecaster is %q", o.Forecaster)
			}
			m, err := forecast.ReadLSTMModelFile(o.ForecastModel)
			if err != nil {
				return policy.Model{}, fmt.Errorf("mark.forecast_model: %w", err)
			}
			o.Forecaster, fo.LSTM = "lstm", &m
		}
		if fc, err = forecast.New(o.Forecaster, fo); err != nil {
			return policy.Model{}, fmt.Errorf("mark.forecaster: %w", err)
		}
	}
	sc, err := markscale.New(markscale.Config{Model: env.Model.Name, Candidates: cand, Standby: o.Standby, Planner: pc,
		Monitor: mc, Forecaster: fc, TrainStepsPerUnit: o.TrainStepsPerUnit,
		SLOMonitor: o.SLOMonitor, Spot: planner.DefaultSpotConfig()})
	if err != nil {
		return policy.Model{}, err
	}
	m := &Policy{Scaler: sc}

	// Initial fleet: the plan for the trace's mean rate (as the sagemaker baseline starts).
	var initial []provider.Spec
	if env.Load.MeanRPS > 0 {
		if initial, err = sc.InitialPlan(env.Load.MeanRPS, env.Start, pc); err != nil {
			return policy.Model{}, err
		}
	}
	pm := policy.Model{Scaler: m, Initial: initial, Batching: batching.NewFixed(cand.MaxBatch, cand.MaxWait)}
	if env.Model.Serverless != nil {
		// The Bouncer spills to the serverless tier; a world without one (the live providers)
		// is a fact the policy sees: every request stays on the fleet.
		pm.Router = m
		pm.Serverless = &policy.Serverless{MemoryMB: o.MemoryMB, Batching: batching.NewNone()}
	}
	return pm, nil
}

// spec returns the launch spec of a planned type, with its own batch size.

// Route is the Bouncer (MArk §4.1): admit to the VM tier when the fleet finishes in time, else
// spill to the serverless tier. "In time" is the one admission estimator's verdict
// (v.Admission: admission.Admit, the live gateway's rule, on a cost learned from the batches
// seen) rather than the profile's service times.
//
// A request that finds no usable instance is admitted by the estimator to wait for one (what the
// live gateway, with nowhere else to send it, does); with a serverless tier the Bouncer spills it
// instead — "its own host instance" cannot finish what it does not have (§4.1).
func (m *Policy) Route(r policy.Request, v policy.TierView, now time.Time) policy.Route {
	return Bounce(v)
}

// Bounce is MArk's Bouncer on the one estimator's verdict (Policy.Route), for policies that
// compose it: the VM tier when the fleet admits the request and has an instance to serve it,
// else the serverless tier.
func Bounce(v policy.TierView) policy.Route { return bounce(v.Admission.Admit, v.Admission.Reason) }

// RouteVerdict implements policy.VerdictRouter: the Bouncer on the verdict alone.
func (m *Policy) RouteVerdict(admit bool, reason string) policy.Route { return bounce(admit, reason) }

// bounce is Bounce on the verdict's Admit and Reason.
func bounce(admit bool, reason string) policy.Route {
	if admit && reason != admission.ReasonNoInstance {
		return policy.RouteVM
	}
	return policy.RouteServerless
}
