package analytic

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// ErrInfeasible reports that no configuration on the grid meets the constraint; the returned
// Plan is then the best effort (the lowest-latency configuration for Eq. 2, the cheapest for
// Eq. 3) with Feasible false.
var ErrInfeasible = errors.New("no configuration meets the constraint")

// Pricing is the serverless price list of Eq. 1.
type Pricing struct {
	// USDPerGBSecond is K1, dollars per GB-second of allocated memory (GB = 1024 MB).
	USDPerGBSecond float64 `json:"usd_per_gb_s"`
	// USDPerInvocation is K2, dollars per function call.
	USDPerInvocation float64 `json:"usd_per_invocation"`
	// Granularity rounds every call's billed duration up to a multiple of it; 0 bills the exact
	// service time, as Eq. 1 does (AWS billed 100 ms slices in 2020 and 1 ms since).
	Granularity time.Duration `json:"granularity"`
}

// DefaultPricing returns AWS Lambda's prices used by BATCH (Eq. 1): K1 = 1.66667e-5 $/GB-s and
// K2 = 2e-7 $ per call, no free tier, exact durations.
func DefaultPricing() Pricing {
	return Pricing{USDPerGBSecond: 1.66667e-5, USDPerInvocation: 2e-7}
}

// Validate reports the first field that is out of range.
func (p Pricing) Validate() error {
	switch {
	case !(p.USDPerGBSecond >= 0) || math.IsInf(p.USDPerGBSecond, 0):
		return fmt.Errorf("pricing.usd_per_gb_s: must be ≥ 0, got %g", p.USDPerGBSecond)
	case !(p.USDPerInvocation >= 0) || math.IsInf(p.USDPerInvocation, 0):
		return fmt.Errorf("pricing.usd_per_invocation: must be ≥ 0, got %g", p.USDPerInvocation)
	case p.Granularity < 0:
		return fmt.Errorf("pricing.granularity: must be ≥ 0, got %v", p.Granularity)
	}
	return nil
}

// CallCost returns the price in dollars of one call lasting seconds with memoryMB MB (Eq. 1 with
// S = seconds, M = memoryMB/1024, I = 1).
func (p Pricing) CallCost(seconds float64, memoryMB int) float64 {
	if g := p.Granularity.Seconds(); g > 0 {
		seconds = math.Ceil(seconds/g-1e-9) * g
	}
	return seconds*float64(memoryMB)/1024*p.USDPerGBSecond + p.USDPerInvocation
}

// Grid is the search space of the exhaustive optimiser (§IV, "exhaustive search"). The memory
// range is intersected with the service model's domain, never extrapolated.
type Grid struct {
	// MemoryMinMB, MemoryMaxMB and MemoryStepMB span the function memory sizes, in MB.
	MemoryMinMB  int `json:"memory_min_mb"`
	MemoryMaxMB  int `json:"memory_max_mb"`
	MemoryStepMB int `json:"memory_step_mb"`
	// MaxBatch is B_max: max batch sizes 1..MaxBatch are explored (capped by the model's domain).
	MaxBatch int `json:"max_batch"`
	// TimeoutStep and TimeoutMax span the timeouts TimeoutStep, 2·TimeoutStep, …, TimeoutMax.
	TimeoutStep time.Duration `json:"timeout_step"`
	TimeoutMax  time.Duration `json:"timeout_max"`
}

// DefaultGrid returns Lambda's memory range 128–10,240 MB in 64 MB steps, B_max = 20 and
// timeouts 10–490 ms in 10 ms steps, BATCH's solver grid (solver.py: arange(0.01, 0.5, 0.01)).
func DefaultGrid() Grid {
	return Grid{MemoryMinMB: 128, MemoryMaxMB: 10240, MemoryStepMB: 64, MaxBatch: 20,
		TimeoutStep: 10 * time.Millisecond, TimeoutMax: 490 * time.Millisecond}
}

// Validate reports the first field that is out of range.
func (g Grid) Validate() error {
	switch {
	case g.MemoryMinMB < 1 || g.MemoryMaxMB < g.MemoryMinMB:
		return fmt.Errorf("grid.memory_min_mb/memory_max_mb: [%d, %d] is empty", g.MemoryMinMB, g.MemoryMaxMB)
	case g.MemoryStepMB < 1:
		return fmt.Errorf("grid.memory_step_mb: must be ≥ 1, got %d", g.MemoryStepMB)
	case g.MaxBatch < 1 || g.MaxBatch > 256:
		return fmt.Errorf("grid.max_batch: must be in [1, 256], got %d", g.MaxBatch)
	case g.TimeoutStep <= 0:
		return fmt.Errorf("grid.timeout_step: must be > 0, got %v", g.TimeoutStep)
	case g.TimeoutMax < g.TimeoutStep || g.TimeoutMax/g.TimeoutStep > 10000:
		return fmt.Errorf("grid.timeout_max: must be in [timeout_step, 10000·timeout_step], got %v", g.TimeoutMax)
	}
	return nil
}

// Objective selects the optimisation problem.
type Objective int

const (
	// MinCost minimises the cost per request subject to P_p ≤ SLO (Eq. 2).
	MinCost Objective = iota
	// MinLatency minimises P_p subject to cost per request ≤ Budget (Eq. 3).
	MinLatency
)

// Problem is one optimisation: arrivals, service model, target and search space.
type Problem struct {
	// Arrivals is the (fitted) arrival process.
	Arrivals *MAP
	// Service gives S_k for each memory size.
	Service ServiceModel
	// Percentile is p in (0, 1), e.g. 0.95 for the 95th percentile latency P_95.
	Percentile float64
	// Objective chooses Eq. 2 (MinCost, needs SLO) or Eq. 3 (MinLatency, needs Budget).
	Objective Objective
	// SLO bounds P_p for MinCost.
	SLO time.Duration
	// Budget bounds the cost per request in dollars for MinLatency.
	Budget float64
	// Grid is the search space; the zero Grid means DefaultGrid().
	Grid Grid
	// Pricing is the price list; the zero Pricing means DefaultPricing().
	Pricing Pricing
	// Start selects π(0) (StartExact unless reproducing the paper).
	Start StartPhase
	// ServiceCV, when > 0, makes Eq. 2's constraint hold under service noise: a configuration is
	// feasible when the predicted fraction of requests within the SLO, with every batch's service
	// time the profile's S_k times a log-normal factor of mean 1 and this coefficient of
	// variation (Batching.Attainment), is at least Percentile. 0 is BATCH's deterministic
	// service (P_p ≤ SLO). BATCH's plans sit a few ms under the SLO, where a 5 % noise misses
	// it on a third of the requests (issue #18). MinCost only; in [0, 2].
	ServiceCV float64
	// Attainment, when its Threshold is set, makes the optimiser predict each plan's attainment
	// under service noise (Batching.Attainment) and, for MinCost with Min > 0, require it too.
	Attainment AttainmentSpec

	// models, when set, shares the batching models between the problems of one Solve.
	models *modelCache
	// eager checks every candidate on its full latency distribution (no attainmentBound, no
	// lazyLatencyCDF): the tests compare the two searches.
	eager bool
	// inOrder checks the candidates' constraints in the search's order, every one that ties or
	// beats the best so far, instead of cheapest first: the same plan, more checks (tests
	// compare the two).
	inOrder bool
}

// AttainmentSpec is a second, optional constraint of Eq. 2 (not in BATCH): the fraction of
// requests predicted within Threshold when batch service times vary log-normally with
// coefficient of variation ServiceCV must be at least Min. A caller sets Min to what another
// plan attains (PolicyConfig.Reference) to make sure the plan it gets is never predicted worse
// than that one at the SLO. When no configuration meeting the SLO constraint reaches Min, Min
// is dropped: the plan is the cheapest within the SLO, as without it.
type AttainmentSpec struct {
	// Threshold is the latency the attainment is counted against (the SLO itself, not a guard).
	Threshold time.Duration `json:"threshold"`
	// ServiceCV is the coefficient of variation of batch service times, ≥ 0.
	ServiceCV float64 `json:"service_cv"`
	// Min is the least attainment required, in [0, 1]; 0 only reports the plan's.
	Min float64 `json:"min"`
}

// Validate reports the first field that is out of range.
func (a AttainmentSpec) Validate() error {
	switch {
	case a.Threshold < 0:
		return fmt.Errorf("attainment.threshold: must be ≥ 0, got %v", a.Threshold)
	case !(a.ServiceCV >= 0 && a.ServiceCV <= 2):
		return fmt.Errorf("attainment.service_cv: must be in [0, 2], got %g", a.ServiceCV)
	case !(a.Min >= 0 && a.Min <= 1):
		return fmt.Errorf("attainment.min: must be in [0, 1], got %g", a.Min)
	case a.Min > 0 && a.Threshold == 0:
		return fmt.Errorf("attainment.threshold: must be > 0 with min %g", a.Min)
	}
	return nil
}

// Plan is the optimiser's answer: the configuration and what the model predicts for it.
type Plan struct {
	// MemoryMB is the function memory size in MB.
	MemoryMB int `json:"memory_mb"`
	// MaxBatch is the buffer's maximum batch size B.
	MaxBatch int `json:"max_batch"`
	// Timeout is the buffer's timeout T (0 when MaxBatch is 1).
	Timeout time.Duration `json:"-"`
	// TimeoutMS is Timeout in milliseconds, for JSON.
	TimeoutMS float64 `json:"timeout_ms"`
	// Percentile is p.
	Percentile float64 `json:"percentile"`
	// LatencyMS is the predicted p-th percentile latency P_p in milliseconds (under ServiceCV's
	// noise when it is > 0).
	LatencyMS float64 `json:"predicted_latency_ms"`
	// ServiceCV is the problem's service-time coefficient of variation LatencyMS and the SLO
	// constraint are predicted with (0: deterministic service, as in BATCH).
	ServiceCV float64 `json:"service_cv"`
	// CostPerRequest is the predicted cost per request in dollars (Eq. 1 over E[K]).
	CostPerRequest float64 `json:"cost_per_request_usd"`
	// MeanBatchSize is the predicted mean number of requests per call.
	MeanBatchSize float64 `json:"mean_batch_size"`
	// ArrivalRate is the arrival process's mean rate in requests per second.
	ArrivalRate float64 `json:"arrival_rate_rps"`
	// Attainment is the predicted fraction of requests within Problem.Attainment.Threshold
	// under its service noise (0 when the problem has no threshold).
	Attainment float64 `json:"predicted_attainment,omitempty"`
	// Feasible reports whether the constraint (SLO or budget) is met.
	Feasible bool `json:"feasible"`
	// Explored is the number of (memory, B, T) configurations evaluated.
	Explored int `json:"explored"`
	// Reason says why this configuration was chosen.
	Reason string `json:"reason"`
}

// Validate reports the first field of p that is out of range.
func (p Problem) Validate() error {
	switch {
	case p.Arrivals == nil:
		return fmt.Errorf("problem.arrivals: missing")
	case p.Service == nil:
		return fmt.Errorf("problem.service: missing")
	case !(p.Percentile > 0 && p.Percentile < 1):
		return fmt.Errorf("problem.percentile: must be in (0, 1), got %g", p.Percentile)
	case p.Objective == MinCost && p.SLO <= 0:
		return fmt.Errorf("problem.slo: must be > 0 to minimise cost, got %v", p.SLO)
	case p.Objective == MinLatency && !(p.Budget > 0):
		return fmt.Errorf("problem.budget: must be > 0 to minimise latency, got %g", p.Budget)
	case p.Objective != MinCost && p.Objective != MinLatency:
		return fmt.Errorf("problem.objective: unknown %d", p.Objective)
	case !(p.ServiceCV >= 0 && p.ServiceCV <= 2):
		return fmt.Errorf("problem.service_cv: must be in [0, 2], got %g", p.ServiceCV)
	case p.ServiceCV > 0 && p.Objective != MinCost:
		return fmt.Errorf("problem.service_cv: constrains the SLO of Eq. 2 (MinCost) only, got %g with a budget", p.ServiceCV)
	}
	if err := p.grid().Validate(); err != nil {
		return err
	}
	if err := p.Attainment.Validate(); err != nil {
		return err
	}
	return p.pricing().Validate()
}

func (p Problem) grid() Grid {
	if p.Grid == (Grid{}) {
		return DefaultGrid()
	}
	return p.Grid
}

func (p Problem) pricing() Pricing {
	if p.Pricing == (Pricing{}) {
		return DefaultPricing()
	}
	return p.Pricing
}

// candidate is one evaluated configuration.
type candidate struct {
	n         int // its place in the search's order (B, then T, then memory)
	mem, b, j int
	i         int     // index of mem in the searched memory sizes
	cost, q   float64 // q: P_p in seconds (NaN until computed)
	att       float64 // predicted attainment (NaN until computed)
	within    float64 // predicted fraction within the SLO under ServiceCV (NaN until computed)
	bt        *Batching
	svc       []float64
}

// Ties of the optimiser's ranking: costs within a relative tieCost (one part in a million) and latencies within
// tieLatency seconds (twice Quantile's resolution) are equal.
const (
	tieCost    = 1e-6
	tieLatency = 2e-6
)

// Optimize solves Eq. 2 or Eq. 3 by exhaustive search over the grid's memory sizes inside the
// service model's domain, max batch sizes 1..B_max and timeouts, with the analytic model: one
// Model per B shares the CTMC across all timeouts, and the latency CDF for each memory size only
// re-weights the precomputed wait distribution. The cost per request is the long-run ratio
// E[cost of a call]/E[K] (renewal reward over batches) — BATCH's solver prices the p-quantile
// batch size instead, which over-states the cost when batches rarely fill. Costs within a
// relative 1e-6 are ties, broken by the lower P_p and then by the smaller batch, timeout and
// memory (at λT ≫ B all timeouts beyond a few fill times cost the same up to rounding). With ServiceCV > 0 the SLO constraint is the predicted
// fraction of requests within the SLO under that service noise (Problem.ServiceCV), and when
// nothing meets it the best effort is the configuration with the highest such fraction.
// Optimize is pure; callers may run problems in parallel.
func Optimize(p Problem) (Plan, error) {
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	g, price := p.grid(), p.pricing()
	bmin, bmax, mlo, mhi := p.Service.Domain()
	lo, hi := max(g.MemoryMinMB, mlo), min(g.MemoryMaxMB, mhi)
	var mems []int
	for m := g.MemoryMinMB; m <= g.MemoryMaxMB; m += g.MemoryStepMB {
		if m >= lo && m <= hi {
			mems = append(mems, m)
		}
	}
	if len(mems) == 0 {
		return Plan{}, fmt.Errorf("optimise: grid memory [%d, %d] MB does not meet the profile's domain [%d, %d] MB", g.MemoryMinMB, g.MemoryMaxMB, mlo, mhi)
	}
	bTop := min(g.MaxBatch, bmax)
	if bmin > 1 || bTop < 1 {
		return Plan{}, fmt.Errorf("optimise: the profile covers batch sizes [%d, %d], need 1", bmin, bmax)
	}
	// Service times per memory size, S_k for k = 1..bTop.
	svc := make([][]float64, len(mems))
	for i, m := range mems {
		svc[i] = make([]float64, bTop)
		for k := 1; k <= bTop; k++ {
			s := p.Service.ServiceTime(k, m)
			if !(s > 0) || math.IsInf(s, 0) {
				return Plan{}, fmt.Errorf("optimise: profile gives %g s for batch %d at %d MB", s, k, m)
			}
			svc[i][k-1] = s
		}
	}
	step := g.TimeoutStep.Seconds()
	nT := int(g.TimeoutMax / g.TimeoutStep)
	slo := p.SLO.Seconds()
	pct := p.Percentile

	var best, fallback *candidate
	// withinSLO is the cheapest configuration meeting the SLO constraint when an attainment
	// floor is set (the plan if none reaches the floor).
	var withinSLO *candidate
	floor := p.Objective == MinCost && p.Attainment.Min > 0
	cv := p.ServiceCV
	attTabs, sloTabs := noiseTables{t: p.Attainment.Threshold.Seconds(), cv: p.Attainment.ServiceCV}, noiseTables{t: slo, cv: cv}
	attain := func(c *candidate) float64 {
		if math.IsNaN(c.att) {
			c.bt.fill()
			c.att = attTabs.attainment(c.bt, c.i, svc[c.i])
		}
		return c.att
	}
	// withinSLO returns the predicted fraction of requests within the SLO: LatencyCDF at the SLO
	// for deterministic service, Attainment under the problem's noise otherwise.
	withinSLOFrac := func(c *candidate) float64 {
		switch {
		case !math.IsNaN(c.within):
		case c.bt.lazy != nil && !(sloTabs.cv > 0) && !p.eager:
			c.within = c.bt.lazyLatencyCDF(svc[c.i][:c.bt.b], sloTabs.t) // = attainment's LatencyCDF
		default:
			c.bt.fill()
			c.within = sloTabs.attainment(c.bt, c.i, svc[c.i])
		}
		return c.within
	}
	explored := 0
	// MinCost keeps every feasible candidate within tieCost of the cheapest seen so far (ties,
	// and sloTies for the SLO constraint alone under a floor) and picks among those within
	// tieCost of the cheapest overall: the lowest P_p, then the earliest (smaller B, T, memory).
	var ties, sloTies []*candidate
	// missed are the candidates checked and found outside the SLO, in the search's order.
	var missed []*candidate
	// all are the MinCost candidates, in the search's order.
	var all []*candidate
	bestCost, sloCost := math.Inf(1), math.Inf(1)
	costTie := func(c, m float64) bool { return c <= m*(1+tieCost) }
	// pp returns a candidate's P_p (under the problem's service noise), computed once.
	pp := func(c *candidate) float64 {
		if math.IsNaN(c.q) {
			c.bt.fill()
			c.q = c.bt.QuantileCV(c.svc, pct, cv)
		}
		return c.q
	}
	pick := func(cs []*candidate, m float64) *candidate {
		var out *candidate
		for _, c := range cs {
			if costTie(c.cost, m) && (out == nil || pp(c) < pp(out)-tieLatency) {
				out = c
			}
		}
		return out
	}
	// better ranks a before b: by cost then P_p (byCost), or by P_p then cost. Values within
	// tieCost (relative) or tieLatency are equal, so that floating-point noise does not break
	// ties; a full tie keeps the earlier candidate (smaller B, then T, then memory).
	better := func(a, b *candidate, byCost bool) bool {
		if b == nil {
			return true
		}
		costTied := math.Abs(a.cost-b.cost) <= tieCost*math.Max(a.cost, b.cost)
		if byCost && !costTied {
			return a.cost < b.cost
		}
		if qa, qb := pp(a), pp(b); math.Abs(qa-qb) > tieLatency {
			return qa < qb
		}
		if !byCost && !costTied {
			return a.cost < b.cost
		}
		return false
	}
	for b := 1; b <= bTop; b++ {
		var md *Model
		var err error
		js := []int{0}
		r := 1
		if b > 1 {
			r = GridSteps(p.Arrivals, b, step, nT, 1)
			md, err = p.models.model(p.Arrivals, b, step/float64(r), float64(nT)*step)
			if err != nil {
				return Plan{}, fmt.Errorf("optimise: %w", err)
			}
			js = js[:0]
			for j := 1; j <= nT; j++ {
				js = append(js, j)
			}
		} else {
			md, err = p.models.model(p.Arrivals, 1, step, 0)
			if err != nil {
				return Plan{}, fmt.Errorf("optimise: %w", err)
			}
		}
		for _, j := range js {
			bt, err := p.models.law(md, float64(j*r)*md.Step(), p.Start)
			if err != nil {
				return Plan{}, fmt.Errorf("optimise: %w", err)
			}
			for i, m := range mems {
				explored++
				s := svc[i][:b]
				c := &candidate{n: explored, mem: m, i: i, b: b, j: j, bt: bt, svc: s, q: math.NaN(), att: math.NaN(), within: math.NaN()}
				for k, pk := range bt.pmf {
					c.cost += pk * price.CallCost(s[k], m)
				}
				c.cost /= bt.meanK
				switch p.Objective {
				case MinCost:
					all = append(all, c)
				case MinLatency:
					bt.fill()
					if c.cost <= p.Budget {
						c.q, _ = bt.Quantile(s, pct)
						if better(c, best, false) {
							best = c
						}
					} else if better(c, fallback, true) {
						fallback = c
					}
				}
			}
		}
	}
	if p.Objective == MinCost {
		// Only a configuration that would win or tie on cost needs its constraints checked, so
		// they are checked cheapest first (equal costs in the search's order) until the costs
		// pass the cheapest feasible one's ties: the same feasible candidates within a tie of
		// the cheapest are found as by checking in the search's order every one that ties or
		// beats the best so far — which checked 98 % more on the week-long Azure traces, each
		// best so far on the way down (issue #17). While nothing is feasible every one is
		// checked, so the best effort sees them all. The lists are put back in the search's
		// order, on which pick and the best effort break ties.
		bySearch := func(a, b *candidate) int { return a.n - b.n }
		sorted := slices.DeleteFunc(slices.Clone(all), func(c *candidate) bool { return math.IsNaN(c.cost) }) // never a tie
		slices.SortStableFunc(sorted, func(a, b *candidate) int { return cmp.Compare(a.cost, b.cost) })
		if p.inOrder {
			sorted = all
		}
		for _, c := range sorted {
			if !costTie(c.cost, bestCost) && (!floor || !costTie(c.cost, sloCost)) {
				if p.inOrder {
					continue
				}
				break // every later one costs as much or more
			}
			if (!p.eager && sloTabs.ruledOut(c.bt, c.i, svc[c.i], pct)) || withinSLOFrac(c) < pct {
				// The best effort, if nothing is feasible, is chosen among these at the end.
				missed = append(missed, c)
				continue
			}
			if floor && costTie(c.cost, sloCost) {
				sloTies = append(sloTies, c)
				sloCost = math.Min(sloCost, c.cost)
			}
			if costTie(c.cost, bestCost) && (!floor || attain(c) >= p.Attainment.Min) {
				ties = append(ties, c)
				bestCost = math.Min(bestCost, c.cost)
			}
		}
		slices.SortFunc(ties, bySearch)
		slices.SortFunc(sloTies, bySearch)
		slices.SortFunc(missed, bySearch)
		best, withinSLO = pick(ties, bestCost), pick(sloTies, sloCost)
		if best == nil && withinSLO == nil {
			// Best effort: the most requests within the SLO under the noise, or the lowest P_p,
			// the first in the search's order on a tie (as when it was kept while searching).
			for _, c := range missed {
				if cv > 0 {
					if withinSLOFrac(c); fallback == nil || c.within > fallback.within {
						fallback = c
					}
					continue
				}
				c.bt.fill()
				c.q, _ = c.bt.Quantile(c.svc, pct)
				if better(c, fallback, false) {
					fallback = c
				}
			}
		}
	}
	floorDropped := floor && best == nil && withinSLO != nil
	if floorDropped {
		best = withinSLO
	}
	feasible := best != nil
	if !feasible {
		best = fallback
	}
	pp(best)
	if p.Attainment.Threshold > 0 {
		attain(best)
	} else {
		best.att = 0
	}
	plan := Plan{
		MemoryMB: best.mem, MaxBatch: best.b,
		Timeout:        time.Duration(best.j) * g.TimeoutStep,
		Percentile:     pct,
		LatencyMS:      best.q * 1000,
		ServiceCV:      cv,
		CostPerRequest: best.cost,
		MeanBatchSize:  best.bt.meanK,
		Attainment:     best.att,
		ArrivalRate:    p.Arrivals.Rate(),
		Feasible:       feasible,
		Explored:       explored,
	}
	plan.TimeoutMS = float64(plan.Timeout) / float64(time.Millisecond)
	switch {
	case floorDropped:
		plan.Reason = "cheapest configuration with P_p within the SLO (Eq. 2); none reaches the attainment floor"
	case feasible && floor:
		plan.Reason = "cheapest configuration with P_p within the SLO (Eq. 2) and the attainment floor"
	case feasible && p.Objective == MinCost && cv > 0:
		plan.Reason = fmt.Sprintf("cheapest configuration with P_p within the SLO under a service CV of %g (Eq. 2)", cv)
	case feasible && p.Objective == MinCost:
		plan.Reason = "cheapest configuration with P_p within the SLO (Eq. 2)"
	case feasible:
		plan.Reason = "lowest P_p within the budget (Eq. 3)"
	case p.Objective == MinCost && cv > 0:
		plan.Reason = "no configuration meets the SLO under the service noise: most requests within it instead"
		return plan, fmt.Errorf("optimise: %w: at most %.4f of requests within SLO %v under service CV %g, want %g", ErrInfeasible, best.within, p.SLO, cv, pct)
	case p.Objective == MinCost:
		plan.Reason = "no configuration meets the SLO: lowest P_p instead"
		return plan, fmt.Errorf("optimise: %w: best P_%g is %.1f ms > SLO %v", ErrInfeasible, pct*100, plan.LatencyMS, p.SLO)
	default:
		plan.Reason = "no configuration fits the budget: cheapest instead"
		return plan, fmt.Errorf("optimise: %w: cheapest is %.3g $/request > budget %.3g", ErrInfeasible, plan.CostPerRequest, p.Budget)
	}
	return plan, nil
}

// noiseTables are the noiseTable of each memory size (by its index in Optimize's list) and grid
// step for one threshold and service noise, shared by every candidate Optimize evaluates.
type noiseTables struct {
	t, cv float64
	tabs  map[noiseKey]*noiseTable
}

type noiseKey struct {
	mem int
	h   float64
}

// table returns the noiseTable of the memory size of index mem (service times service) at bt's
// grid step, nil without noise.
func (ts *noiseTables) table(bt *Batching, mem int, service []float64) *noiseTable {
	if !(ts.cv > 0) {
		return nil
	}
	k := noiseKey{mem: mem, h: bt.h}
	tab := ts.tabs[k]
	if tab == nil {
		if ts.tabs == nil {
			ts.tabs = map[noiseKey]*noiseTable{}
		}
		tab = newNoiseTable(service, ts.t, ts.cv, bt.h)
		ts.tabs[k] = tab
	}
	return tab
}

// attainment returns bt.Attainment(service[:B], t, cv) for the memory size of index mem, whose
// service times are service, with the integrals kept for the next candidate of the same memory
// size and grid step. bt must be filled.
func (ts *noiseTables) attainment(bt *Batching, mem int, service []float64) float64 {
	if tab := ts.table(bt, mem, service); tab != nil {
		return bt.attainment(tab)
	}
	return bt.LatencyCDF(service[:bt.b], ts.t)
}

// boundMargin is how far below the target a bound must be to rule a candidate out: the bounds
// hold in exact arithmetic and the computed attainment differs from the exact one by rounding
// (~1e-15) and by the log-normal's cut-off at 7σ (Ψ's jumps there, ~1e-13·S_k, over a grid
// step: ≲ 1e-9), so with this margin a ruled-out candidate is one the full computation finds
// infeasible too, and the plan is unchanged.
const boundMargin = 1e-6

// ruledOut reports whether bt's batch-size law alone shows that fewer than pct of requests
// are within the threshold (attainmentBound), for a law whose wait distribution is not
// computed yet (a computed one is checked exactly by the caller, at the same cost).
func (ts *noiseTables) ruledOut(bt *Batching, mem int, service []float64, pct float64) bool {
	if bt.lazy == nil {
		return false
	}
	tab := ts.table(bt, mem, service)
	if bt.attainmentBound(service, ts.t, tab) < pct-boundMargin {
		return true
	}
	// Second, with noise and a long enough grid: the wait distribution at coarsePoints points.
	return tab != nil && bt.j > 2*coarsePoints && bt.coarseBound(tab, coarsePoints) < pct-boundMargin
}

// coarsePoints is how many grid points coarseBound evaluates the wait distribution at.
const coarsePoints = 16
