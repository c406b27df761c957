package sim

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/autoscale"
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
	Register("mark", "MArk: predictive greedy planner over the catalog (Alg. 1), Bouncer spill to serverless, SLO monitor, spot with burstable standbys (MArk §4)", newMark)
}

// MarkOptions configures the mark policy (policies.mark in a sim config).
type MarkOptions struct {
	// Forecaster is the forecasting method (forecast.Methods()); default ewma — the backtest's
	// best cheap method on the Twitter trace; lstm trains TrainStepsPerUnit steps every unit.
	Forecaster string `yaml:"forecaster"`
	// TrainStepsPerUnit is how many LSTM steps run at every completed unit (0: 20).
	TrainStepsPerUnit int `yaml:"train_steps_per_unit"`
	// Spot adds every type's spot market variant ("<type>/spot") to the candidates (MArk-spot).
	Spot bool `yaml:"spot"`
	// Types restricts the candidate types (default: every type the model has a profile for).
	Types []string `yaml:"types"`
	// Headroom, Lookahead and CoolDown override the planner's (1.2, 5 min, 6 min).
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
}

// markPolicy is the state the scaler and the router share (both are called from the engine's
// one goroutine).
type markPolicy struct {
	model    string
	types    []planner.InstanceType
	byName   map[string]planner.InstanceType
	svcTime  map[string]time.Duration // service time of the type's own batch
	plan     *planner.Mark
	mon      *forecast.Monitor
	fc       forecast.Forecaster
	train    int
	slo      *slomon.Monitor
	spotCfg  planner.SpotConfig
	standby  planner.InstanceType
	sloType  planner.InstanceType
	bouncer  admission.Bouncer
	maxWait  time.Duration
	horizon  int
	unit     time.Duration
	lastSeen time.Time
	nextPlan time.Time
	seen     map[string]bool // interrupted ids already handled
	// fleet view for the router, refreshed at every Scale
	drain   float64
	slowest time.Duration
}

func newMark(env Env) (Policy, error) {
	o := MarkOptions{Forecaster: "ewma", TrainStepsPerUnit: 20, Headroom: planner.DefaultHeadroom,
		Lookahead: planner.DefaultLookahead, CoolDown: planner.DefaultCoolDown, BatchBudget: 0.5, MemoryMB: DefaultLambdaMemoryMB,
		SLOMonitor: slomon.DefaultConfig()}
	o.SLOMonitor.Target = env.SLO.Target
	if err := env.decode(&o); err != nil {
		return Policy{}, err
	}
	if !(o.BatchBudget > 0 && o.BatchBudget <= 1) {
		return Policy{}, fmt.Errorf("mark.batch_budget: must be in (0, 1], got %v", o.BatchBudget)
	}
	if o.MemoryMB <= 0 {
		return Policy{}, fmt.Errorf("mark.memory_mb: must be > 0, got %d", o.MemoryMB)
	}
	if env.Catalog == nil {
		c := cost.DefaultCatalog()
		env.Catalog = &c
	}
	pc := planner.DefaultMarkConfig()
	pc.Headroom, pc.Lookahead, pc.CoolDown = o.Headroom, o.Lookahead, o.CoolDown
	pl, err := planner.NewMark(pc)
	if err != nil {
		return Policy{}, err
	}
	m := &markPolicy{model: env.Model.Name, byName: map[string]planner.InstanceType{}, svcTime: map[string]time.Duration{},
		plan: pl, train: o.TrainStepsPerUnit, spotCfg: planner.DefaultSpotConfig(), seen: map[string]bool{}}

	// Catalog view: every profiled type, batching tuned by MArk §4.3 (batching.TuneFixed), μ* × slots.
	names := o.Types
	if len(names) == 0 {
		names = env.Model.Types()
	}
	rt := time.Duration(float64(env.SLO.Threshold) * o.BatchBudget)
	maxN, minW := 1, time.Duration(math.MaxInt64)
	for _, name := range names {
		it, ok := env.Catalog.Type(name)
		if !ok {
			continue
		}
		b, ok := env.Model.VM[name]
		if !ok {
			return Policy{}, fmt.Errorf("mark.types: model %s has no profile for %q", env.Model.Name, name)
		}
		t := planner.Tune(planner.InstanceType{Name: name, PricePerHour: it.PricePerHour, LaunchDelay: it.LaunchDelay.Median}, b.Curve, rt, 0, batching.TuneFixed)
		t.Capacity *= float64(max(b.Slots, 1))
		if it.Kind == cost.KindBurstable {
			// §3.2: burstables cannot sustain full speed; they are standbys, never planned.
			if t.Feasible && m.standby.Name == "" {
				m.standby = t
			}
			continue
		}
		add := func(t planner.InstanceType) {
			m.types = append(m.types, t)
			m.byName[t.Name] = t
			m.svcTime[t.Name] = b.Curve.ServiceTime(max(t.MaxBatch, 1))
		}
		add(t)
		if t.Feasible {
			maxN = max(maxN, t.MaxBatch)
			minW = min(minW, t.MaxWait)
		}
		if o.Spot && it.SpotPricePerHour > 0 {
			s := t
			s.Name, s.Spot, s.PricePerHour = name+cost.SpotSuffix, true, it.SpotPricePerHour
			add(s)
		}
	}
	cheapest := planner.InstanceType{}
	for _, t := range m.types {
		if t.Feasible && !t.Spot && (cheapest.Name == "" || t.PricePerHour/t.Capacity < cheapest.PricePerHour/cheapest.Capacity) {
			cheapest = t
		}
	}
	if cheapest.Name == "" {
		return Policy{}, fmt.Errorf("mark: %w (model %s, RT_max budget %v)", planner.ErrNoFeasibleType, env.Model.Name, rt)
	}
	if minW == time.Duration(math.MaxInt64) {
		minW = 0
	}
	m.maxWait = minW
	if o.Standby != "" {
		t, ok := m.byName[o.Standby]
		if !ok && m.standby.Name != o.Standby {
			return Policy{}, fmt.Errorf("mark.standby: %q is not a profiled type", o.Standby)
		}
		if ok {
			m.standby = t
		}
	}
	if m.standby.Name == "" {
		m.standby = cheapest
	}
	if m.standby.Name != "" {
		if _, ok := m.svcTime[m.standby.Name]; !ok {
			m.svcTime[m.standby.Name] = env.Model.VM[m.standby.Name].Curve.ServiceTime(max(m.standby.MaxBatch, 1))
		}
	}

	sc := o.SLOMonitor
	if _, ok := m.byName[sc.Type]; !ok {
		sc.Type = cheapest.Name
	}
	m.sloType = m.byName[sc.Type]
	if m.slo, err = slomon.New(sc); err != nil {
		return Policy{}, fmt.Errorf("mark: %w", err)
	}

	mc := forecast.DefaultMonitorConfig()
	m.horizon, m.unit = mc.Window, mc.Unit
	fo := forecast.DefaultOptions()
	if m.fc, err = forecast.New(o.Forecaster, fo); err != nil {
		return Policy{}, fmt.Errorf("mark.forecaster: %w", err)
	}
	m.mon, err = forecast.NewMonitor(mc, func(v float64) {
		m.fc.Observe(v)
		if tr, ok := m.fc.(forecast.Trainer); ok {
			tr.Train(m.train)
		}
	})
	if err != nil {
		return Policy{}, err
	}
	if m.bouncer, err = admission.NewBouncer(admission.DefaultConfig()); err != nil {
		return Policy{}, err
	}

	// Initial fleet: the plan for the trace's mean rate (as the sagemaker baseline starts).
	var initial []provider.Spec
	if env.Load.MeanRPS > 0 {
		rates := make([]float64, m.horizon)
		for i := range rates {
			rates[i] = env.Load.MeanRPS
		}
		p, err := planner.Schedule(m.types, nil, planner.Forecast{Start: DefaultEpoch, Step: m.unit, Rates: rates}, pc, DefaultEpoch)
		if err != nil {
			return Policy{}, fmt.Errorf("mark: initial plan: %w", err)
		}
		for _, n := range p.Launch {
			initial = append(initial, m.spec(n))
		}
	}
	return Policy{
		Scaler:     m,
		Initial:    initial,
		Batching:   batching.NewFixed(maxN, minW),
		Router:     RouterFunc(m.route),
		Serverless: &Serverless{MemoryMB: o.MemoryMB, Batching: batching.NewNone()},
	}, nil
}

// spec returns the launch spec of a planned type, with its own batch size.
func (m *markPolicy) spec(name string) provider.Spec {
	t := m.byName[name]
	if name == m.standby.Name {
		t = m.standby
	}
	return provider.Spec{Model: m.model, Type: name, Tier: provider.TierVM, MaxBatch: max(t.MaxBatch, 1), MaxWait: t.MaxWait}
}

// route is the Bouncer: admit to the VM tier when the fleet finishes in time, else spill.
func (m *markPolicy) route(r Request, v TierView, now time.Time) Route {
	d := m.bouncer.DecidePool(admission.PoolView{Queued: v.QueueLen, Slots: v.Slots, FreeSlots: v.FreeSlots,
		DrainRate: m.drain, MaxWait: m.maxWait, ServiceTime: m.slowest}, r.Deadline, now)
	if d.Admit {
		return RouteVM
	}
	return RouteServerless
}

// Reasons of the mark scaler's decisions.
const (
	markReasonPlan      = "mark: plan (Alg. 1)"
	markReasonHold      = "mark: between plans"
	markReasonSLO       = "mark: SLO monitor launch"
	markReasonSpot      = "mark: spot interruption, standbys resumed"
	markReasonPlanError = "mark: plan failed, fleet unchanged"
)

// Scale implements autoscale.Scaler.
func (m *markPolicy) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	// Feed the arrival monitor and the SLO monitor with the samples not seen yet.
	for _, x := range s.History {
		if !x.Start.After(m.lastSeen) && !m.lastSeen.IsZero() {
			continue
		}
		m.lastSeen = x.Start
		m.mon.Observe(x.Arrivals, x.Start)
		for range x.Completed - x.Missed {
			m.slo.Observe(true)
		}
		for range x.Missed {
			m.slo.Observe(false)
		}
	}
	m.mon.Observe(0, now)

	var running []planner.Running
	var interrupted []planner.Running
	m.drain, m.slowest = 0, 0
	for _, f := range s.Fleet {
		r := planner.Running{ID: f.ID, Type: f.Type, Ready: f.State == provider.StateReady, Launched: f.Launched}
		switch f.State {
		case provider.StateLaunching, provider.StateReady:
			running = append(running, r)
		case provider.StateInterrupted:
			if !m.seen[f.ID] {
				m.seen[f.ID] = true
				interrupted = append(interrupted, r)
			}
		}
		if f.State == provider.StateReady {
			t, ok := m.byName[f.Type]
			if !ok && f.Type == m.standby.Name {
				t, ok = m.standby, true
			}
			if ok {
				m.drain += t.Capacity
				m.slowest = max(m.slowest, m.svcTime[f.Type])
			}
		}
	}

	var d autoscale.Decision
	d.Reason = markReasonHold
	replan := false
	if len(interrupted) > 0 {
		standbys := make([]planner.Standby, len(interrupted)*4)
		for i := range standbys {
			standbys[i] = planner.Standby{ID: m.standby.Name, Type: m.standby.Name, Capacity: m.standby.Capacity}
		}
		sd, err := planner.OnInterruption(interrupted, m.types, standbys, m.spotCfg)
		if err == nil {
			for _, name := range sd.Resume {
				d.Launch = append(d.Launch, m.spec(name))
			}
			replan = sd.Replan
			d.Reason = markReasonSpot
		}
	}
	if sd := m.slo.Decide(now); sd.Launch > 0 {
		for range sd.Launch {
			d.Launch = append(d.Launch, m.spec(m.sloType.Name))
		}
		d.Reason = markReasonSLO
	}
	if replan || !now.Before(m.nextPlan) {
		m.nextPlan = now.Add(m.unit)
		rates := m.fc.Forecast(m.horizon)
		if m.mon.Len() == 0 {
			cur := m.mon.Current()
			for i := range rates {
				rates[i] = cur
			}
		}
		// Instances launched by this decision count as running for the plan.
		for i, sp := range d.Launch {
			running = append(running, planner.Running{ID: fmt.Sprintf("pending-%d", i), Type: sp.Type, Launched: now})
		}
		p, err := m.plan.Step(m.types, running, planner.Forecast{Start: m.mon.UnitStart(), Step: m.unit, Rates: rates}, now)
		if err != nil {
			d.Reason = markReasonPlanError
		} else {
			for _, n := range p.Launch {
				d.Launch = append(d.Launch, m.spec(n))
			}
			for _, id := range p.Terminate {
				if len(id) < 8 || id[:8] != "pending-" {
					d.Terminate = append(d.Terminate, id)
				}
			}
			sort.Strings(d.Terminate)
			if d.Reason == markReasonHold {
				d.Reason = markReasonPlan
			}
		}
	}
	d.Next = m.nextPlan
	return d
}
