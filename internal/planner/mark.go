package planner

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Named defaults of the MArk planner (MArk §4.2–§4.3 and mark-constants.json).
const (
	// DefaultLookahead is τ: "assuming most instances can get ready in τ time units after
	// launching, we use the predicted load at t_0 + τ as the provisioning target … τ is set to
	// 5 minutes" (§4.3).
	DefaultLookahead = 5 * time.Minute
	// DefaultHeadroom multiplies the forecast before it is covered: 1, none. The paper plans for
	// the forecast itself, which is already a peak — "the maximum arrival rate" of each unit over
	// P_s = 5 s samples (§4.2, §4.3 F_t) — and lets the serverless tier absorb what the fleet
	// cannot finish in time, because "we can reduce over-provisioning by combining IaaS and
	// FaaS" (§3.1 summary, §4.1). The original scheduler multiplied by OriginalHeadroom because
	// it did not forecast at all (its LSTM output was unused: it planned for the largest window
	// seen so far). Measured on MArk §5.1's setting (docs/mark.md): 1.2 costs 17 % (Twitter)
	// and 15 % (fn4) more for attainment 1.0000 instead of 0.9999, where SL_min is 0.98; and an
	// oracle covering each minute's actual peak with free launches costs $42.03 on Twitter, so
	// 1.2 × that is already within 2 % of SageMaker / 2.4.
	DefaultHeadroom = 1.0
	// OriginalHeadroom is the original implementation's factor (Times_headroom in
	// mark-constants.json), kept for comparison runs (docs/mark-sim-original.yaml).
	OriginalHeadroom = 1.2
	// DefaultLaunchOverhead is the launch period billed as O_i when a type gives no launch delay:
	// the original charges price_per_s × 180 s (launch_overhead_cost in mark-constants.json).
	DefaultLaunchOverhead = 180 * time.Second
	// DefaultCoolDown is how long an instance must stay surplus before it is destroyed (§4.3:
	// "the destroying requests … should be sent after a predefined cool-down period"; the paper
	// gives no value). Keeping a surplus instance costs P_i per unit of time; destroying it and
	// needing it again costs O_i, its rent over its launch delay (100 s for the catalog's CPU
	// types, 120 s for p2.xlarge). Waiting until the rent paid equals O_i — the ski-rental
	// break-even, rounded up to whole one-minute plans: 2 min — never pays more than twice the
	// better of the two choices in hindsight, whatever the load does next. The original waited
	// six plans (OriginalCoolDown), which kept instances idle for 6 min after every peak: on
	// MArk §5.1's setting 6 min costs 7 % (Twitter) and 8 % (fn4) more than 2 min for at most
	// 0.0001 attainment.
	DefaultCoolDown = 2 * time.Minute
	// OriginalCoolDown is the original implementation's cool-down: six one-minute plans
	// (scale_in_hysteresis_plans in mark-constants.json).
	OriginalCoolDown = 6 * time.Minute
	// DefaultMaxInstances bounds a plan so that a runaway forecast cannot launch without limit.
	DefaultMaxInstances = 1000
)

// InstanceType is the planner's view of one catalog entry after batching has been tuned for it
// (MArk §4.3: "we can simply treat the target instance as a black box with processing rate μ*").
// The owner of the catalog (internal/cost) and the batching rule fill it in.
type InstanceType struct {
	// Name is the catalog name (e.g. "c5.large", "p2.xlarge-spot").
	Name string
	// PricePerHour is P_i in US dollars per hour (the spot price for spot types).
	PricePerHour float64
	// Spot marks an interruptible type.
	Spot bool
	// LaunchDelay is how long an instance takes from launch to ready; P_i × LaunchDelay is the
	// launch overhead O_i. Zero means DefaultLaunchOverhead.
	LaunchDelay time.Duration
	// Capacity is μ*, the sustained rate one instance serves within the SLO, in requests/s.
	Capacity float64
	// Feasible reports whether the type can meet the SLO at all (T_1 ≤ RT_max); Alg. 1 removes
	// the others from the candidate set.
	Feasible bool
	// MaxBatch and MaxWait are the batching configuration (N_batch, W_batch) the instance is
	// launched with; zero means the runtime's default.
	MaxBatch int
	MaxWait  time.Duration
}

// overhead returns O_i in dollars.
func (t InstanceType) overhead() float64 {
	d := t.LaunchDelay
	if d <= 0 {
		d = DefaultLaunchOverhead
	}
	return t.PricePerHour * d.Hours()
}

// Running is one instance of the current fleet (launching or ready) as the planner sees it.
type Running struct {
	// ID is the provider's instance id.
	ID string
	// Type is the catalog name of its type.
	Type string
	// Ready reports whether it serves traffic already; Launched is when it was launched.
	Ready    bool
	Launched time.Time
}

// Forecast is the predicted maximum request rate per step (the forecaster's output).
type Forecast struct {
	// Start is the beginning of step 0; Step is the length of a step (P_u).
	Start time.Time
	Step  time.Duration
	// Rates holds the predicted maximum arrival rate of each step, in requests/s.
	Rates []float64
}

// MarkConfig configures the MArk planner.
type MarkConfig struct {
	// Lookahead is τ: launches are planned for the steps from now+τ on (a new instance could not
	// be ready for earlier ones; the serverless tier covers what the fleet cannot); keep and
	// surplus are decided over every step from now on (Plan.Bridge).
	Lookahead time.Duration
	// Headroom multiplies every forecast rate before it is covered (≥ 1).
	Headroom float64
	// CoolDown is how long a running instance must be surplus before Mark.Step terminates it.
	CoolDown time.Duration
	// MaxInstances bounds the number of instances in a plan.
	MaxInstances int
}

// DefaultMarkConfig returns τ = 5 min, headroom 1, cool-down 2 min, at most 1000 instances.
func DefaultMarkConfig() MarkConfig {
	return MarkConfig{Lookahead: DefaultLookahead, Headroom: DefaultHeadroom, CoolDown: DefaultCoolDown, MaxInstances: DefaultMaxInstances}
}

// Validate reports the first field that is out of range.
func (c MarkConfig) Validate() error {
	switch {
	case c.Lookahead < 0:
		return fmt.Errorf("mark.lookahead: must be >= 0, got %v", c.Lookahead)
	case !(c.Headroom >= 1) || math.IsInf(c.Headroom, 1):
		return fmt.Errorf("mark.headroom: must be a finite factor >= 1, got %v", c.Headroom)
	case c.CoolDown < 0:
		return fmt.Errorf("mark.cool_down: must be >= 0, got %v", c.CoolDown)
	case c.MaxInstances <= 0:
		return fmt.Errorf("mark.max_instances: must be > 0, got %d", c.MaxInstances)
	}
	return nil
}

// Plan is the planner's decision at one instant.
type Plan struct {
	// Launch lists the types to launch now, one entry per instance.
	Launch []string
	// Keep lists the ids of running instances in the plan.
	Keep []string
	// Surplus lists the ids of running instances not in the plan (Alg. 1's "destroy" set before
	// the cool-down).
	Surplus []string
	// Bridge lists the ids in Keep that only the steps before now+τ need: the forecast there is
	// above what the rest of the plan keeps, and no launch can be ready before now+τ.
	Bridge []string
	// Terminate lists the ids to terminate now: surplus for at least the cool-down (set by
	// Mark.Step; Schedule leaves it empty).
	Terminate []string
	// Capacity is the planned capacity (kept + launched), in requests/s.
	Capacity float64
	// Target is the largest headroomed forecast rate from now on, in requests/s (launches cover
	// the steps from now+τ; running instances, with Bridge, the earlier ones).
	Target float64
	// Cost is the plan's cost over the planning window (from now+τ): P_i × window for every
	// instance, bridges included, plus O_i for every launched one, in US dollars.
	Cost float64
	// SurplusCost is the rent the surplus running instances still cost before the cool-down
	// lets them go: P_i × CoolDown for each, in US dollars. Dropping a running instance is not
	// free, so plans are compared on Cost + SurplusCost.
	SurplusCost float64
	// Reasons explains the choices, one line per greedy pick or rule.
	Reasons []string
}

// Errors the planner reports.
var (
	// ErrNoFeasibleType means no instance type (and no running instance) can meet the SLO.
	ErrNoFeasibleType = errors.New("no instance type can meet the SLO")
	// ErrTooManyInstances means covering the forecast needs more than MaxInstances instances.
	ErrTooManyInstances = errors.New("plan exceeds max instances")
)

// candidate is one member of Alg. 1's set S: a type, either as a running instance (zero launch
// overhead, limited count) or as a new launch.
type candidate struct {
	typ     InstanceType
	running bool
	left    []string // unused running ids of this type (when running)
}

// Schedule is MArk's Algorithm 1 (§4.3). Running instances join the candidate set with zero
// launch overhead; candidates that cannot meet the SLO are removed; then FILL repeats: find the
// first step τ' ≥ τ whose headroomed forecast exceeds the planned capacity, the largest e such
// that every step in [τ', e] is short, and add the candidate with the lowest cost per request
//
//	cost_i = (O_i + (e − τ' + 1)·P_i) / N_i,  N_i = Σ_{t=τ'}^{e} min(Λ_t, C_i)·P_u
//
// (O_i = 0 for running instances), until no step is short. Alg. 1 writes (e − τ)P_i; the
// inclusive count makes a one-step gap cost one step of rent rather than none, which otherwise
// lets a running instance and a new one tie at zero rent.
//
// Where the paper is silent, two rules make the greedy safe: types with zero capacity are never
// candidates, and the result is compared with the cheapest single-type cover (n = ⌈target/C_i⌉
// instances of one type, reusing running ones) and replaced by it when that is cheaper — the
// greedy's per-request choice can overshoot with a large instance and pay a second one for the
// remainder, and a production planner should never be beaten by the trivial plan. Both sides
// of that comparison include SurplusCost, the cool-down rent of the running instances each plan
// drops: without it, a forecast hovering near 2 × 55 req/s made the planner swap ten running
// c5.large for a second p2.xlarge (0.3 % cheaper per hour) and back every few minutes, paying
// a launch and two cool-downs per swap (MArk §5.1 Twitter run: 41 p2.xlarge launches against
// 22 with the rent counted, 3.5 % of the cost; docs/mark.md).
//
// Alg. 1 plans from τ on; the instances already running are also needed before τ. So keep and
// surplus are decided over [now, end] and launches over [now + τ, end]: when the plan keeps
// less than the largest forecast step before now+τ, running instances it would drop are kept
// as a bridge (Plan.Bridge), ready ones and the cheapest per request first. Without it a
// cool-down shorter than τ (2 min against 5) terminated capacity the forecast still showed
// (issue #18: 19 of 22 c5.large at minute 2 under 100 req/s forecast until minute 5).
//
// Schedule is pure; Terminate is left empty (the cool-down is Mark's job).
func Schedule(types []InstanceType, running []Running, f Forecast, c MarkConfig, now time.Time) (Plan, error) {
	if err := c.Validate(); err != nil {
		return Plan{}, err
	}
	if f.Step <= 0 || len(f.Rates) == 0 {
		return Plan{}, fmt.Errorf("schedule: forecast needs a positive step and at least one rate (step %v, %d rates)", f.Step, len(f.Rates))
	}
	byName := make(map[string]InstanceType, len(types))
	for _, t := range types {
		byName[t.Name] = t
	}
	// Running instances grouped by type, ready ones first, oldest first.
	rs := append([]Running(nil), running...)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Ready != rs[j].Ready {
			return rs[i].Ready
		}
		return rs[i].Launched.Before(rs[j].Launched)
	})
	var plan Plan
	runIDs := map[string][]string{}
	dropped := 0.0 // cool-down rent of running instances no plan can use
	for _, r := range rs {
		t, ok := byName[r.Type]
		if !ok || !usable(t) {
			plan.Surplus = append(plan.Surplus, r.ID)
			if ok && t.PricePerHour > 0 {
				dropped += t.PricePerHour * c.CoolDown.Hours()
			}
			reason := "unknown type"
			if ok {
				reason = "cannot meet the SLO"
			}
			plan.Reasons = append(plan.Reasons, fmt.Sprintf("drop %s (%s): %s", r.ID, r.Type, reason))
			continue
		}
		runIDs[r.Type] = append(runIDs[r.Type], r.ID)
	}
	var cands []*candidate
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := byName[n]
		if !usable(t) {
			continue
		}
		if ids := runIDs[n]; len(ids) > 0 {
			cands = append(cands, &candidate{typ: t, running: true, left: ids})
		}
		cands = append(cands, &candidate{typ: t})
	}
	if len(cands) == 0 {
		return Plan{}, ErrNoFeasibleType
	}

	// The launch window: steps from the one containing now+τ to the end. The keep window starts
	// earlier, at the step containing now: steps in [now, now+τ) can only be served by running
	// instances (bridge, below).
	stepOf := func(at time.Time) int {
		return min(max(int(at.Sub(f.Start)/f.Step), 0), len(f.Rates)-1)
	}
	first, cur := stepOf(now.Add(c.Lookahead)), stepOf(now)
	rate := func(i int) float64 {
		v := f.Rates[i]
		if !(v > 0) || math.IsNaN(v) {
			v = 0
		}
		return v * c.Headroom
	}
	target := make([]float64, len(f.Rates)-first)
	for i := range target {
		target[i] = rate(first + i)
		plan.Target = math.Max(plan.Target, target[i])
	}
	early := 0.0 // the largest headroomed rate of the steps in [now, now+τ)
	for i := cur; i < first; i++ {
		early = math.Max(early, rate(i))
	}
	windowH := f.Step.Hours() * float64(len(target))
	stepH, stepS := f.Step.Hours(), f.Step.Seconds()

	// FILL, iteratively.
	var chosen []*candidate // one entry per planned instance (running ones carry their id)
	var keep []string
	capSum := 0.0
	for {
		lo := -1
		for t, v := range target {
			if v-capSum > 1e-9 {
				lo = t
				break
			}
		}
		if lo < 0 {
			break
		}
		hi := lo
		for hi+1 < len(target) && target[hi+1]-capSum > 1e-9 {
			hi++
		}
		if len(chosen) >= c.MaxInstances {
			return Plan{}, fmt.Errorf("%w: %d instances cover %.1f of %.1f req/s", ErrTooManyInstances, len(chosen), capSum, plan.Target)
		}
		var best *candidate
		bestCost := math.Inf(1)
		for _, cd := range cands {
			if cd.running && len(cd.left) == 0 {
				continue
			}
			var n float64
			for t := lo; t <= hi; t++ {
				n += math.Min(target[t]-capSum, cd.typ.Capacity) * stepS
			}
			o := 0.0
			if !cd.running {
				o = cd.typ.overhead()
			}
			cost := (o + float64(hi-lo+1)*stepH*cd.typ.PricePerHour) / n
			if cost < bestCost || (cost == bestCost && cd.running && !best.running) {
				best, bestCost = cd, cost
			}
		}
		if best == nil {
			return Plan{}, fmt.Errorf("%w: no candidate can serve the gap at steps %d–%d", ErrNoFeasibleType, first+lo, first+hi)
		}
		capSum += best.typ.Capacity
		chosen = append(chosen, best)
		if best.running {
			id := best.left[0]
			best.left = best.left[1:]
			keep = append(keep, id)
			plan.Reasons = append(plan.Reasons, fmt.Sprintf("keep %s (%s): $%.2g/req over steps %d–%d", id, best.typ.Name, bestCost, first+lo, first+hi))
		} else {
			plan.Launch = append(plan.Launch, best.typ.Name)
			plan.Reasons = append(plan.Reasons, fmt.Sprintf("launch %s: $%.2g/req over steps %d–%d", best.typ.Name, bestCost, first+lo, first+hi))
		}
	}
	plan.Keep = keep
	plan.Capacity = capSum
	plan.Cost = planCost(chosen, windowH)
	keptOf := map[string]int{}
	for _, cd := range chosen {
		if cd.running {
			keptOf[cd.typ.Name]++
		}
	}
	plan.SurplusCost = dropped + surplusCost(byName, runIDs, keptOf, c.CoolDown)

	// Compare with the cheapest single-type cover, both with the cool-down rent of what they drop.
	if st, cost, sc, ok := cheapestSingleType(cands, byName, runIDs, plan.Target, windowH, c); ok && cost+dropped+sc < plan.Cost+plan.SurplusCost-1e-12 {
		plan.Launch, plan.Keep, plan.Capacity, plan.Cost, plan.SurplusCost = nil, nil, 0, cost, dropped+sc
		n := 0
		if plan.Target > 0 {
			n = int(math.Ceil(plan.Target/st.typ.Capacity - 1e-9))
		}
		ids := runIDs[st.typ.Name]
		for i := range n {
			if i < len(ids) {
				plan.Keep = append(plan.Keep, ids[i])
			} else {
				plan.Launch = append(plan.Launch, st.typ.Name)
			}
			plan.Capacity += st.typ.Capacity
		}
		plan.Reasons = append(plan.Reasons, fmt.Sprintf("single-type cover with %d × %s ($%.4g) beats the greedy plan", n, st.typ.Name, cost))
	}
	kept := make(map[string]bool, len(plan.Keep))
	for _, id := range plan.Keep {
		kept[id] = true
	}
	plan.bridge(rs, byName, kept, early, windowH)
	plan.Target = math.Max(plan.Target, early)
	for _, t := range names {
		for _, id := range runIDs[t] {
			if !kept[id] {
				plan.Surplus = append(plan.Surplus, id)
			}
		}
	}
	if len(plan.Bridge) > 0 {
		keptOf := map[string]int{}
		for _, r := range rs {
			if kept[r.ID] {
				keptOf[r.Type]++
			}
		}
		plan.SurplusCost = dropped + surplusCost(byName, runIDs, keptOf, c.CoolDown)
	}
	return plan, nil
}

// bridge keeps running instances the plan drops while the kept ones (launching or ready) cannot
// cover early, the largest forecast rate before now+τ: launches made now are not ready before
// then, so only the running fleet can serve those steps. Ready instances go first, then the
// cheapest per request/s, oldest first within a price (rs is sorted ready first, oldest first).
// A running instance the forecast needs before τ is never surplus, whatever the cool-down.
func (p *Plan) bridge(rs []Running, byName map[string]InstanceType, kept map[string]bool, early, windowH float64) {
	var have float64
	for _, r := range rs {
		if kept[r.ID] {
			have += byName[r.Type].Capacity
		}
	}
	// Short by more than rounding, as the single-type cover's ⌈gap/C_i − 1e-9⌉.
	short := func(t InstanceType) bool { return (early-have)/t.Capacity > 1e-9 }
	var spare []Running
	for _, r := range rs {
		if t, ok := byName[r.Type]; ok && usable(t) && !kept[r.ID] {
			spare = append(spare, r)
		}
	}
	sort.SliceStable(spare, func(i, j int) bool {
		if spare[i].Ready != spare[j].Ready {
			return spare[i].Ready
		}
		ti, tj := byName[spare[i].Type], byName[spare[j].Type]
		return ti.PricePerHour/ti.Capacity < tj.PricePerHour/tj.Capacity
	})
	for _, r := range spare {
		t := byName[r.Type]
		if !short(t) {
			break
		}
		kept[r.ID] = true
		have += t.Capacity
		p.Keep = append(p.Keep, r.ID)
		p.Bridge = append(p.Bridge, r.ID)
		p.Capacity += t.Capacity
		p.Cost += t.PricePerHour * windowH
	}
	if len(p.Bridge) == 0 {
		return
	}
	p.Reasons = append(p.Reasons, fmt.Sprintf("bridge %d running until now+τ: the forecast needs %.1f req/s before launches can be ready, kept capacity %.1f", len(p.Bridge), early, have))
}

// usable reports whether a type can be a candidate.
func usable(t InstanceType) bool {
	return t.Feasible && t.Capacity > 0 && !math.IsInf(t.Capacity, 0) && t.PricePerHour >= 0 && !math.IsNaN(t.PricePerHour)
}

// planCost is Σ P_i × window + O_i for launched instances.
func planCost(chosen []*candidate, windowH float64) float64 {
	var c float64
	for _, cd := range chosen {
		c += cd.typ.PricePerHour * windowH
		if !cd.running {
			c += cd.typ.overhead()
		}
	}
	return c
}

// SingleTypeCost is the cost over windowH hours of covering target (requests/s) with instances
// of type t alone, reusing up to running of them at no launch overhead; it returns the number of
// instances too.
func SingleTypeCost(t InstanceType, running int, target, windowH float64) (n int, cost float64) {
	if target > 0 {
		n = int(math.Ceil(target/t.Capacity - 1e-9))
	}
	reused := min(n, running)
	return n, float64(n)*t.PricePerHour*windowH + float64(n-reused)*t.overhead()
}

// surplusCost is the rent of the running instances a plan drops during the cool-down: for each
// type, the running instances (runIDs) beyond the kept count, times P_i × coolDown.
func surplusCost(byName map[string]InstanceType, runIDs map[string][]string, kept map[string]int, coolDown time.Duration) float64 {
	var c float64
	for n, ids := range runIDs {
		if k := len(ids) - kept[n]; k > 0 {
			c += float64(k) * byName[n].PricePerHour * coolDown.Hours()
		}
	}
	return c
}

// cheapestSingleType returns the type whose single-type cover is cheapest counting the
// cool-down rent of the running instances it drops (returned apart, as the cover's
// SurplusCost); runIDs holds the running instances of each usable type.
func cheapestSingleType(cands []*candidate, byName map[string]InstanceType, runIDs map[string][]string, target, windowH float64, c MarkConfig) (*candidate, float64, float64, bool) {
	var best *candidate
	bestCost, bestSurplus := math.Inf(1), 0.0
	for _, cd := range cands {
		if cd.running {
			continue
		}
		n, cost := SingleTypeCost(cd.typ, len(runIDs[cd.typ.Name]), target, windowH)
		if n > c.MaxInstances {
			continue
		}
		sc := surplusCost(byName, runIDs, map[string]int{cd.typ.Name: n}, c.CoolDown)
		if cost+sc < bestCost+bestSurplus {
			best, bestCost, bestSurplus = cd, cost, sc
		}
	}
	return best, bestCost, bestSurplus, best != nil
}
