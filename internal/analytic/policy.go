package analytic

import (
	"fmt"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
)

// PolicyConfig configures the online BATCH policy (§VI-D): observe arrivals on a sliding window,
// fit a MAP(2), re-run the optimiser, apply the new (memory, B, T).
type PolicyConfig struct {
	// Window is the sliding window of observed arrivals the MAP is fitted on (BATCH §VI-D: 1 h).
	Window time.Duration `json:"window"`
	// Period is how often the policy re-fits and re-optimises (BATCH §V: every hour).
	Period time.Duration `json:"period"`
	// Retry is how soon to try again when the window held too few arrivals to fit.
	Retry time.Duration `json:"retry"`
	// MinSamples is the fewest inter-arrival times (requests) a fit needs.
	MinSamples int `json:"min_samples"`
	// Percentile is p of the SLO P_p ≤ SLO, in (0, 1).
	Percentile float64 `json:"percentile"`
	// Objective chooses Eq. 2 (MinCost with SLO) or Eq. 3 (MinLatency with Budget).
	Objective Objective `json:"objective"`
	// SLO bounds P_p for MinCost.
	SLO time.Duration `json:"slo"`
	// Budget bounds the cost per request for MinLatency, in dollars.
	Budget float64 `json:"budget_usd"`
	// Grid is the optimiser's search space.
	Grid Grid `json:"grid"`
	// Pricing is the serverless price list.
	Pricing Pricing `json:"pricing"`
}

// DefaultPolicyConfig returns BATCH's online settings: a 1-hour window re-fitted every hour,
// p95 ≤ 1 s, the default grid and Lambda prices; a fit needs 100 arrivals, retried every minute.
func DefaultPolicyConfig() PolicyConfig {
	return PolicyConfig{Window: time.Hour, Period: time.Hour, Retry: time.Minute, MinSamples: 100,
		Percentile: 0.95, SLO: time.Second, Grid: DefaultGrid(), Pricing: DefaultPricing()}
}

// Validate reports the first field that is out of range.
func (c PolicyConfig) Validate() error {
	switch {
	case c.Window <= 0:
		return fmt.Errorf("batch policy.window: must be > 0, got %v", c.Window)
	case c.Period <= 0:
		return fmt.Errorf("batch policy.period: must be > 0, got %v", c.Period)
	case c.Retry <= 0:
		return fmt.Errorf("batch policy.retry: must be > 0, got %v", c.Retry)
	case c.MinSamples < 3:
		return fmt.Errorf("batch policy.min_samples: must be ≥ 3, got %d", c.MinSamples)
	}
	// The problem's own checks cover the target, grid and prices; arrivals and service are
	// supplied later, so stand-ins fill them here.
	p := Problem{Arrivals: &MAP{}, Service: TFResnetV2, Percentile: c.Percentile, Objective: c.Objective,
		SLO: c.SLO, Budget: c.Budget, Grid: c.Grid, Pricing: c.Pricing}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("batch policy: %w", err)
	}
	return nil
}

// Replan fits a MAP(2) to interarrivals (seconds) and solves the configured problem for svc:
// the pure core of the online policy, (observed inter-arrivals) → configuration. When the
// problem is infeasible it returns the best-effort plan and the ErrInfeasible error.
func (c PolicyConfig) Replan(interarrivals []float64, svc ServiceModel) (Plan, error) {
	a, _, err := FitMAP2(interarrivals)
	if err != nil {
		return Plan{}, fmt.Errorf("replan: %w", err)
	}
	return Optimize(Problem{Arrivals: a, Service: svc, Percentile: c.Percentile, Objective: c.Objective,
		SLO: c.SLO, Budget: c.Budget, Grid: c.Grid, Pricing: c.Pricing})
}

// Online is the online BATCH policy: it records arrivals, and when asked at or after its next
// re-planning time it fits the window and re-optimises. It is pure with respect to time (given
// now), starts no goroutine and does no I/O; one goroutine owns it.
type Online struct {
	cfg      PolicyConfig
	svc      ServiceModel
	arrivals []int64 // Unix nanoseconds, unsorted between re-plans
	plan     Plan
	next     time.Time
	started  bool
	fits     int
	lastErr  error
}

// NewOnline returns the policy for service model svc. Until the first successful fit it runs
// vanilla Lambda: no batching (B = 1) with the largest memory of svc's domain inside the grid.
func NewOnline(cfg PolicyConfig, svc ServiceModel) (*Online, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if svc == nil {
		return nil, fmt.Errorf("batch policy: nil service model")
	}
	_, _, _, mhi := svc.Domain()
	mem := min(mhi, cfg.Grid.MemoryMaxMB)
	return &Online{cfg: cfg, svc: svc, plan: Plan{MemoryMB: mem, MaxBatch: 1, Percentile: cfg.Percentile,
		Reason: "initial: no arrivals observed yet, vanilla Lambda at the largest memory"}}, nil
}

// Observe records one request arrival.
func (o *Online) Observe(arrival time.Time) { o.arrivals = append(o.arrivals, arrival.UnixNano()) }

// Plan returns the configuration in force at now and when to ask again. At or after the
// re-planning time it drops arrivals older than the window, fits and re-optimises; with too few
// arrivals, or when the fit fails, it keeps the current configuration and retries later.
func (o *Online) Plan(now time.Time) (Plan, time.Time) {
	if !o.started {
		o.started = true
		o.next = now.Add(o.cfg.Retry)
		return o.plan, o.next
	}
	if now.Before(o.next) {
		return o.plan, o.next
	}
	cut := now.Add(-o.cfg.Window).UnixNano()
	slices.Sort(o.arrivals)
	i, _ := slices.BinarySearch(o.arrivals, cut)
	o.arrivals = append(o.arrivals[:0], o.arrivals[i:]...)
	if len(o.arrivals)-1 < o.cfg.MinSamples {
		o.next = now.Add(o.cfg.Retry)
		return o.plan, o.next
	}
	ia := make([]float64, len(o.arrivals)-1)
	for k := range ia {
		ia[k] = float64(o.arrivals[k+1]-o.arrivals[k]) / 1e9
	}
	plan, err := o.cfg.Replan(ia, o.svc)
	o.lastErr = err
	if plan.MaxBatch > 0 {
		o.plan = plan
		o.fits++
	}
	o.next = now.Add(o.cfg.Period)
	return o.plan, o.next
}

// Fits returns how many re-plans produced a configuration.
func (o *Online) Fits() int { return o.fits }

// LastError returns the error of the last re-plan (nil, or ErrInfeasible with a best-effort plan).
func (o *Online) LastError() error { return o.lastErr }

// Current returns the configuration in force, without re-planning.
func (o *Online) Current() Plan { return o.plan }

// BufferPolicy is the online BATCH policy as a batching.Policy for one queue: it dispatches
// when the queue holds B requests or the oldest has waited T (§III-B), with (B, T) and the
// memory from Online; it learns the arrivals from the completed batches it is told about.
type BufferPolicy struct {
	o *Online
}

var _ batching.Policy = (*BufferPolicy)(nil)

// NewBufferPolicy returns the batching.Policy driven by o.
func NewBufferPolicy(o *Online) *BufferPolicy { return &BufferPolicy{o: o} }

// Online returns the policy's planner, e.g. to read the memory size it chose.
func (p *BufferPolicy) Online() *Online { return p.o }

// Decide implements batching.Policy.
func (p *BufferPolicy) Decide(q batching.Queue, now time.Time) batching.Decision {
	plan, next := p.o.Plan(now)
	b := max(plan.MaxBatch, 1)
	switch {
	case q.Len == 0:
		return batching.Decision{Next: next, Reason: "empty"}
	case q.Len >= b:
		return batching.Decision{Dispatch: b, Next: next, Reason: "batch full"}
	}
	deadline := q.Oldest.Add(plan.Timeout)
	if !now.Before(deadline) {
		return batching.Decision{Dispatch: q.Len, Next: next, Reason: "timeout"}
	}
	if deadline.Before(next) {
		next = deadline
	}
	return batching.Decision{Next: next, Reason: "waiting for batch or timeout"}
}

// Observe implements batching.Policy: the batch's arrivals feed the sliding window.
func (p *BufferPolicy) Observe(o batching.Outcome, now time.Time) {
	for _, a := range o.Arrivals {
		p.o.Observe(a)
	}
}

// MaxBatch implements batching.Policy.
func (p *BufferPolicy) MaxBatch() int { return max(p.o.Current().MaxBatch, 1) }

// MemoryMB returns the function memory size the current plan asks for, in MB.
func (p *BufferPolicy) MemoryMB() int { return p.o.Current().MemoryMB }
