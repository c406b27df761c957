package analytic

import (
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
)

func testPolicyConfig() PolicyConfig {
	c := DefaultPolicyConfig()
	c.Window, c.Period, c.Retry = 10*time.Minute, 10*time.Minute, time.Minute
	c.SLO = 5 * time.Second
	c.Grid = smallGrid
	return c
}

func TestOnlineReplansOnItsWindow(t *testing.T) {
	o, err := NewOnline(testPolicyConfig(), TFResnetV2)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	plan, next := o.Plan(t0)
	if plan.MaxBatch != 1 || plan.MemoryMB != 3008 || !next.Equal(t0.Add(time.Minute)) {
		t.Errorf("initial: (-want +got) {B:1 M:3008 next:+1m} {B:%d M:%d next:%v}", plan.MaxBatch, plan.MemoryMB, next.Sub(t0))
	}
	// Too few arrivals: keep the plan, retry after Retry.
	plan, next = o.Plan(t0.Add(time.Minute))
	if o.Fits() != 0 || !next.Equal(t0.Add(2*time.Minute)) || plan.MaxBatch != 1 {
		t.Errorf("without data: fits %d next %v B %d, want 0, +2m, 1", o.Fits(), next.Sub(t0), plan.MaxBatch)
	}
	// Ten minutes of 40 req/s Poisson arrivals.
	now := t0.Add(2 * time.Minute)
	for _, d := range sample(mustMAP(t)(Poisson(40)), 24000, 9) {
		now = now.Add(time.Duration(d * float64(time.Second)))
		o.Observe(now)
	}
	plan, next = o.Plan(now)
	if o.Fits() != 1 || !next.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("after data: fits %d next %v, want 1, +10m (err %v)", o.Fits(), next.Sub(now), o.LastError())
	}
	if plan.MaxBatch < 2 || !plan.Feasible || plan.LatencyMS > 5000 || plan.ArrivalRate < 36 || plan.ArrivalRate > 44 {
		t.Errorf("plan at 40 req/s, p95 ≤ 5 s: %+v", plan)
	}
	// Asked again before next: same plan, no new fit.
	if again, _ := o.Plan(now.Add(time.Second)); again != plan || o.Fits() != 1 {
		t.Errorf("re-planned before its time")
	}
}

func TestBufferPolicyDecides(t *testing.T) {
	o, err := NewOnline(testPolicyConfig(), TFResnetV2)
	if err != nil {
		t.Fatal(err)
	}
	o.plan = Plan{MemoryMB: 2048, MaxBatch: 4, Timeout: 100 * time.Millisecond}
	t0 := time.Unix(1_700_000_000, 0)
	o.started, o.next = true, t0.Add(time.Hour)
	p := NewBufferPolicy(o)
	var _ batching.Policy = p
	for _, tc := range []struct {
		name string
		q    batching.Queue
		now  time.Time
		want batching.Decision
	}{
		{"empty", batching.Queue{}, t0, batching.Decision{Next: t0.Add(time.Hour), Reason: "empty"}},
		{"full", batching.Queue{Len: 6, Oldest: t0}, t0, batching.Decision{Dispatch: 4, Next: t0.Add(time.Hour), Reason: "batch full"}},
		{"waiting", batching.Queue{Len: 2, Oldest: t0}, t0.Add(40 * time.Millisecond),
			batching.Decision{Next: t0.Add(100 * time.Millisecond), Reason: "waiting for batch or timeout"}},
		{"timeout", batching.Queue{Len: 2, Oldest: t0}, t0.Add(100 * time.Millisecond),
			batching.Decision{Dispatch: 2, Next: t0.Add(time.Hour), Reason: "timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Decide(tc.q, tc.now); got != tc.want {
				t.Errorf("Decide: (-want +got)\n%+v\n%+v", tc.want, got)
			}
		})
	}
	if p.MaxBatch() != 4 || p.MemoryMB() != 2048 {
		t.Errorf("MaxBatch, MemoryMB: (-want +got) 4 2048, %d %d", p.MaxBatch(), p.MemoryMB())
	}
	p.Observe(batching.Outcome{Size: 2, Arrivals: []time.Time{t0, t0.Add(time.Millisecond)}}, t0)
	if len(o.arrivals) != 2 {
		t.Errorf("Observe recorded %d arrivals, want 2", len(o.arrivals))
	}
}

func TestPolicyConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*PolicyConfig)
	}{
		{"window", func(c *PolicyConfig) { c.Window = 0 }},
		{"period", func(c *PolicyConfig) { c.Period = -1 }},
		{"min samples", func(c *PolicyConfig) { c.MinSamples = 1 }},
		{"percentile", func(c *PolicyConfig) { c.Percentile = 1 }},
		{"slo", func(c *PolicyConfig) { c.SLO = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultPolicyConfig()
			tc.mod(&c)
			if err := c.Validate(); err == nil {
				t.Errorf("Validate = nil, want an error")
			}
		})
	}
	if err := DefaultPolicyConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}
