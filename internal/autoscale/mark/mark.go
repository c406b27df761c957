package mark

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/forecast"
	"github.com/sloserve/sloserve/internal/planner"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slomon"
)

// Candidates is the catalog as the planner sees it: every profiled type with its batching tuned
// by the MArk §4.3 rule, so that each is a black box of rate μ* (Capacity, times its slots).
type Candidates struct {
	// Types are the plannable (non-burstable) types, spot variants after their on-demand type.
	Types []planner.InstanceType
	// Standby is the first SLO-feasible burstable type (resumed on spot interruptions); zero
	// when there is none.
	Standby planner.InstanceType
	// MaxBatch is the largest N_batch and MaxWait the smallest W_batch over the feasible types:
	// the fleet-wide fixed batching a shared queue uses.
	MaxBatch int
	MaxWait  time.Duration
}

// ErrNoProfile means a candidate type has no service-time profile for the model.
var ErrNoProfile = errors.New("no profile for type")

// Tune builds the candidates for model m over the named catalog types (every type the model is
// profiled on when names is empty): batching.TuneFixedSlots gives each type its (N_batch,
// W_batch) within the batching budget rt (MArk §4.3), with the no-batching rate μ*_nb of all
// its slots; capacity is μ* times the type's slots; burstable
// types are standbys only (§3.2: they cannot sustain full speed); with spot, every type with a
// spot price adds its "<type>/spot" variant. Names the catalog does not know are skipped.
func Tune(cat *cost.Catalog, m profile.Model, names []string, rt time.Duration, spot bool) (Candidates, error) {
	c := Candidates{MaxBatch: 1}
	if len(names) == 0 {
		names = m.Types()
	}
	minW := time.Duration(math.MaxInt64)
	for _, name := range names {
		it, ok := cat.Type(name)
		if !ok {
			continue
		}
		b, ok := m.VM[name]
		if !ok {
			return Candidates{}, fmt.Errorf("model %s: %w %q", m.Name, ErrNoProfile, name)
		}
		slots := max(b.Slots, 1)
		t := planner.Tune(planner.InstanceType{Name: name, PricePerHour: it.PricePerHour, LaunchDelay: it.LaunchDelay.Median}, b.Curve, rt, 0,
			func(c profile.Curve, rt time.Duration, maxBatch int) (int, time.Duration, float64) {
				return batching.TuneFixedSlots(c, rt, maxBatch, slots)
			})
		t.Capacity *= float64(slots)
		if it.Kind == cost.KindBurstable {
			if t.Feasible && c.Standby.Name == "" {
				c.Standby = t
			}
			continue
		}
		add := func(t planner.InstanceType) {
			c.Types = append(c.Types, t)
		}
		add(t)
		if t.Feasible {
			c.MaxBatch = max(c.MaxBatch, t.MaxBatch)
			minW = min(minW, t.MaxWait)
		}
		if spot && it.SpotPricePerHour > 0 {
			s := t
			s.Name, s.Spot, s.PricePerHour = name+cost.SpotSuffix, true, it.SpotPricePerHour
			add(s)
		}
	}
	if minW == time.Duration(math.MaxInt64) {
		minW = 0
	}
	c.MaxWait = minW
	return c, nil
}

// Cheapest returns the SLO-feasible on-demand type with the lowest price per request/s, or
// false when there is none.
func (c Candidates) Cheapest() (planner.InstanceType, bool) {
	best := planner.InstanceType{}
	for _, t := range c.Types {
		if t.Feasible && !t.Spot && (best.Name == "" || t.PricePerHour/t.Capacity < best.PricePerHour/best.Capacity) {
			best = t
		}
	}
	return best, best.Name != ""
}

// Config configures a Scaler.
type Config struct {
	// Model is the model every launched instance serves.
	Model string
	// Candidates are the tuned types (Tune).
	Candidates Candidates
	// Standby names the type resumed on a spot interruption; "" means Candidates.Standby, else
	// the cheapest feasible on-demand type.
	Standby string
	// Planner configures Alg. 1 (τ, headroom, cool-down, max instances).
	Planner planner.MarkConfig
	// Monitor configures the arrival monitor (P_s, P_u, P_w).
	Monitor forecast.MonitorConfig
	// Forecaster predicts the next P_w unit maxima; nil means EWMA with default options.
	Forecaster forecast.Forecaster
	// TrainStepsPerUnit is how many training steps a forecast.Trainer runs at every completed
	// unit.
	TrainStepsPerUnit int
	// SLOMonitor configures the SLO monitor (§4.4); a Type that is not a candidate falls back to
	// the cheapest feasible on-demand type.
	SLOMonitor slomon.Config
	// Spot configures the interruption handling (§4.5).
	Spot planner.SpotConfig
}

// Scaler is MArk's autoscaler. It is pure (no clock, no goroutine, no I/O) and owned by one
// goroutine: the simulator's event loop or the live controller's loop. Its Bouncer (§4.1) is the
// one admission estimator's verdict (internal/admission, policy/mark's Bounce).
type Scaler struct {
	model    string
	types    []planner.InstanceType
	byName   map[string]planner.InstanceType
	plan     *planner.Mark
	mon      *forecast.Monitor
	fc       forecast.Forecaster
	train    int
	slo      *slomon.Monitor
	spotCfg  planner.SpotConfig
	standby  planner.InstanceType
	sloType  planner.InstanceType
	maxWait  time.Duration
	horizon  int
	unit     time.Duration
	lastSeen time.Time
	nextPlan time.Time
	seen     map[string]bool // interrupted ids already handled, while still in the fleet
	// reactive are the SLO monitor's launches (§4.4), outside the plan until the SLO recovers;
	// judging is set once they are all ready and the SLO window restarted on their service.
	reactive  []reactiveLaunch
	judging   bool
	recovered bool // the SLO met SL_min over a full window judged with them ready
}

var _ autoscale.Scaler = (*Scaler)(nil)

// New returns a Scaler; it fails when no candidate type can meet the SLO.
func New(c Config) (*Scaler, error) {
	pl, err := planner.NewMark(c.Planner)
	if err != nil {
		return nil, err
	}
	cand := c.Candidates
	m := &Scaler{model: c.Model, byName: map[string]planner.InstanceType{},
		plan: pl, train: c.TrainStepsPerUnit, spotCfg: c.Spot, seen: map[string]bool{},
		types: cand.Types, standby: cand.Standby, maxWait: cand.MaxWait}
	for _, t := range cand.Types {
		m.byName[t.Name] = t
	}
	cheapest, ok := cand.Cheapest()
	if !ok {
		return nil, fmt.Errorf("mark: %w (model %s)", planner.ErrNoFeasibleType, c.Model)
	}
	if c.Standby != "" {
		t, ok := m.byName[c.Standby]
		if !ok && m.standby.Name != c.Standby {
			return nil, fmt.Errorf("mark.standby: %q is not a profiled type", c.Standby)
		}
		if ok {
			m.standby = t
		}
	}
	if m.standby.Name == "" {
		m.standby = cheapest
	}

	sc := c.SLOMonitor
	if _, ok := m.byName[sc.Type]; !ok {
		sc.Type = cheapest.Name
	}
	m.sloType = m.byName[sc.Type]
	if m.slo, err = slomon.New(sc); err != nil {
		return nil, fmt.Errorf("mark: %w", err)
	}
	m.horizon, m.unit = c.Monitor.Window, c.Monitor.Unit
	m.fc = c.Forecaster
	if m.fc == nil {
		if m.fc, err = forecast.New("ewma", forecast.DefaultOptions()); err != nil {
			return nil, err
		}
	}
	m.mon, err = forecast.NewMonitor(c.Monitor, func(v float64) {
		m.fc.Observe(v)
		if tr, ok := m.fc.(forecast.Trainer); ok {
			tr.Train(m.train)
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Types returns the candidate types (shared; do not modify).
func (m *Scaler) Types() []planner.InstanceType { return m.types }

// Unit returns P_u, the planning period.
func (m *Scaler) Unit() time.Duration { return m.unit }

// Horizon returns P_w, the number of units forecast.
func (m *Scaler) Horizon() int { return m.horizon }

// Monitor returns the arrival monitor (owned by the Scaler's goroutine).
func (m *Scaler) Monitor() *forecast.Monitor { return m.mon }

// Forecaster returns the forecaster (owned by the Scaler's goroutine).
func (m *Scaler) Forecaster() forecast.Forecaster { return m.fc }

// PlannerConfig returns Alg. 1's configuration (τ, headroom, cool-down, max instances).
func (m *Scaler) PlannerConfig() planner.MarkConfig { return m.plan.Config() }

// MaxWait returns W_batch of the shared queue: the smallest over the feasible types.
func (m *Scaler) MaxWait() time.Duration { return m.maxWait }

// Forecast returns the rates the planner covers next: the forecaster's next P_w unit maxima, or
// the current sample's rate repeated before the first unit has completed.
func (m *Scaler) Forecast() []float64 {
	rates := m.fc.Forecast(m.horizon)
	if m.mon.Len() == 0 {
		cur := m.mon.Current()
		for i := range rates {
			rates[i] = cur
		}
	}
	return rates
}

// InitialPlan returns the fleet Alg. 1 plans for a constant rate (requests/s) from start: how a
// run starts before the monitor has seen a unit.
func (m *Scaler) InitialPlan(rate float64, start time.Time, c planner.MarkConfig) ([]provider.Spec, error) {
	rates := make([]float64, m.horizon)
	for i := range rates {
		rates[i] = rate
	}
	p, err := planner.Schedule(m.types, nil, planner.Forecast{Start: start, Step: m.unit, Rates: rates}, c, start)
	if err != nil {
		return nil, fmt.Errorf("mark: initial plan: %w", err)
	}
	out := make([]provider.Spec, 0, len(p.Launch))
	for _, n := range p.Launch {
		out = append(out, m.Spec(n))
	}
	return out, nil
}

// Spec returns the launch spec of a planned type, with its own batch size (N_batch, W_batch).
func (m *Scaler) Spec(name string) provider.Spec {
	t := m.byName[name]
	if name == m.standby.Name {
		t = m.standby
	}
	return provider.Spec{Model: m.model, Type: name, Tier: provider.TierVM, MaxBatch: max(t.MaxBatch, 1), MaxWait: t.MaxWait}
}

// Capacity returns μ* of a type (0 for an unknown one).
func (m *Scaler) Capacity(name string) float64 {
	if t, ok := m.byName[name]; ok {
		return t.Capacity
	}
	if name == m.standby.Name {
		return m.standby.Capacity
	}
	return 0
}

// reactiveLaunch is one instance the SLO monitor launched: its type, when, and the fleet id it
// was matched to ("" until the provider's instance shows up in a snapshot).
type reactiveLaunch struct {
	typ   string
	at    time.Time
	id    string
	ready bool
}

// trackReactive matches the SLO monitor's launches to fleet members — an unmatched launch takes
// the oldest launching or ready member of its type launched at or after it and not matched yet
// — and forgets those whose instance is gone, or that no member matched within one plan period
// (the provider did not launch it). It returns the ids of the matched ones.
func (m *Scaler) trackReactive(fleet []autoscale.Member, now time.Time) map[string]bool {
	if len(m.reactive) == 0 {
		return nil
	}
	live := make(map[string]autoscale.Member, len(fleet))
	for _, f := range fleet {
		if f.State == provider.StateLaunching || f.State == provider.StateReady {
			live[f.ID] = f
		}
	}
	ids := map[string]bool{}
	for _, r := range m.reactive {
		if r.id != "" {
			ids[r.id] = true
		}
	}
	kept := m.reactive[:0]
	for _, r := range m.reactive {
		if r.id == "" {
			var pick autoscale.Member
			for _, f := range fleet {
				if _, ok := live[f.ID]; ok && f.Type == r.typ && !ids[f.ID] && !f.Launched.Before(r.at) &&
					(pick.ID == "" || f.Launched.Before(pick.Launched) || (f.Launched.Equal(pick.Launched) && f.ID < pick.ID)) {
					pick = f
				}
			}
			if pick.ID != "" {
				r.id = pick.ID
				ids[r.id] = true
			}
		}
		f, ok := live[r.id]
		switch {
		case r.id == "" && now.Sub(r.at) < m.unit:
		case !ok:
			delete(ids, r.id)
			continue
		default:
			r.ready = f.State == provider.StateReady
		}
		kept = append(kept, r)
	}
	m.reactive = kept
	return ids
}

// Reasons of the Scaler's decisions.
const (
	ReasonPlan      = "mark: plan (Alg. 1)"
	ReasonHold      = "mark: between plans"
	ReasonSLO       = "mark: SLO monitor launch"
	ReasonSpot      = "mark: spot interruption, standbys resumed"
	ReasonPlanError = "mark: plan failed, fleet unchanged"
)

// runningOf is fleet member f as the planner sees it.
func runningOf(f autoscale.Member) planner.Running {
	return planner.Running{ID: f.ID, Type: f.Type, Ready: f.State == provider.StateReady, Launched: f.Launched}
}

// firstUnseen returns the index of the first sample of h (oldest first, as Snapshot.History
// is) that starts after the last one observed, scanning back from the newest: every earlier
// sample was observed by an earlier call, so Scale's cost per call does not grow with the
// history's length (a per-sample cost over a week of 1-second samples, issue #17).
func (m *Scaler) firstUnseen(h []autoscale.Sample) int {
	if m.lastSeen.IsZero() {
		return 0
	}
	i := len(h)
	for i > 0 && h[i-1].Start.After(m.lastSeen) {
		i--
	}
	return i
}

// Scale implements autoscale.Scaler: it feeds the arrival and SLO monitors with the samples not
// seen yet, resumes standbys for newly interrupted spot instances (§4.5), lets the SLO monitor
// launch (§4.4), and every P_u runs Alg. 1 over the forecast with the running fleet as
// zero-overhead candidates; surplus instances are terminated after the planner's cool-down.
//
// The SLO monitor's launches add capacity the forecast did not ask for, so they are not the
// plan's: they serve outside it until the SLO recovers — all of them ready, then a full window
// of M requests at SL_min or better — and the plan alone covers the load they served (its
// capacity reaches the last unit's peak); only then do they join the running fleet the plan
// sees. Released on recovery alone, a forecast that stays wrong made a 12-minute sawtooth:
// released, terminated after the cool-down, missed, launched again.
// Counted as running they were surplus at once (Schedule keeps ready instances first) and were
// terminated after the cool-down while still launching (issue #18 item 1), so §4.4 had no
// effect exactly when the forecast was wrong.
func (m *Scaler) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	for _, x := range s.History[m.firstUnseen(s.History):] {
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

	reactive := m.trackReactive(s.Fleet, now)
	var interrupted []planner.Running
	for _, f := range s.Fleet {
		if f.State == provider.StateInterrupted && !m.seen[f.ID] {
			m.seen[f.ID] = true
			interrupted = append(interrupted, runningOf(f))
		}
	}
	// The fleet's ids and the planner's running list only when they are read (the interrupted
	// seen so far; a plan): building both at every sample was a quarter of this Scale (issue #17).
	if len(m.seen) > 0 {
		inFleet := make(map[string]bool, len(s.Fleet))
		for _, f := range s.Fleet {
			inFleet[f.ID] = true
		}
		for id := range m.seen {
			if !inFleet[id] {
				delete(m.seen, id)
			}
		}
	}

	var d autoscale.Decision
	d.Reason = ReasonHold
	replan := false
	if len(interrupted) > 0 {
		standbys := make([]planner.Standby, len(interrupted)*4)
		for i := range standbys {
			standbys[i] = planner.Standby{ID: m.standby.Name, Type: m.standby.Name, Capacity: m.standby.Capacity}
		}
		sd, err := planner.OnInterruption(interrupted, m.types, standbys, m.spotCfg)
		if err == nil {
			for _, name := range sd.Resume {
				d.Launch = append(d.Launch, m.Spec(name))
			}
			replan = sd.Replan
			d.Reason = ReasonSpot
		}
	}
	// §4.4's reactive launches are outside the plan until the SLO recovers: once they are all
	// ready the SLO window restarts, and a full window meeting SL_min, with a plan that covers
	// the observed load, releases them to the planner (which keeps them or lets them go after
	// its cool-down).
	if len(m.reactive) > 0 && !m.judging {
		ready := true
		for _, r := range m.reactive {
			ready = ready && r.ready
		}
		if ready {
			m.slo.Reset()
			m.judging = true
		}
	}
	pending := len(d.Launch) // launched by this decision and counted as running for the plan
	if sd := m.slo.Decide(now); sd.Launch > 0 {
		for range sd.Launch {
			d.Launch = append(d.Launch, m.Spec(m.sloType.Name))
			m.reactive = append(m.reactive, reactiveLaunch{typ: m.sloType.Name, at: now})
		}
		m.judging, m.recovered = false, false
		d.Reason = ReasonSLO
	} else if m.judging {
		m.recovered = sd.Reason == slomon.ReasonMet // a violation in the cool-down un-recovers
	}
	if replan || !now.Before(m.nextPlan) {
		m.nextPlan = now.Add(m.unit)
		rates := m.Forecast()
		var running []planner.Running
		for _, f := range s.Fleet {
			if (f.State == provider.StateLaunching || f.State == provider.StateReady) && !reactive[f.ID] {
				running = append(running, runningOf(f))
			}
		}
		for i, sp := range d.Launch[:pending] {
			running = append(running, planner.Running{ID: fmt.Sprintf("pending-%d", i), Type: sp.Type, Launched: now})
		}
		p, err := m.plan.Step(m.types, running, planner.Forecast{Start: m.mon.UnitStart(), Step: m.unit, Rates: rates}, now)
		if err != nil {
			d.Reason = ReasonPlanError
		} else {
			for _, n := range p.Launch {
				d.Launch = append(d.Launch, m.Spec(n))
			}
			for _, id := range p.Terminate {
				if len(id) < 8 || id[:8] != "pending-" {
					d.Terminate = append(d.Terminate, id)
				}
			}
			sort.Strings(d.Terminate)
			// Released once the plan alone covers the load they served: the last unit's peak.
			if m.recovered && p.Capacity >= max(m.mon.Last(), m.mon.Current())-1e-9 {
				m.reactive, m.judging, m.recovered = nil, false, false
			}
			if d.Reason == ReasonHold {
				d.Reason = ReasonPlan
			}
		}
	}
	d.Next = m.nextPlan
	return d
}
