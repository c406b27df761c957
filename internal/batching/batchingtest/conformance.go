// Package batchingtest is the conformance test every batching.Policy passes.
package batchingtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
)

// Scenario is one deterministic workload the conformance test drives a policy through.
type Scenario struct {
	// Name names the sub-test.
	Name string
	// Seed seeds the arrival and service-time generator (PCG).
	Seed uint64
	// Requests is how many requests arrive.
	Requests int
	// MeanGap is the mean inter-arrival time (exponential gaps).
	MeanGap time.Duration
	// SLO is every request's deadline after its arrival; ShortShare of the requests get a
	// deadline of SLO/2 instead.
	SLO        time.Duration
	ShortShare float64
	// Service is the service time of a batch of size b: Base + PerItem·b, ×(1 ± Jitter).
	Base, PerItem time.Duration
	Jitter        float64
	// FailEvery makes every FailEvery-th batch fail (0 = never).
	FailEvery int
}

// DefaultScenarios returns light, heavy, bursty-deadline and failing workloads for a 200 ms SLO.
func DefaultScenarios() []Scenario {
	return []Scenario{
		{Name: "light", Seed: 1, Requests: 400, MeanGap: 20 * time.Millisecond, SLO: 200 * time.Millisecond, Base: 10 * time.Millisecond, PerItem: 2 * time.Millisecond, Jitter: 0.2},
		{Name: "heavy", Seed: 2, Requests: 3000, MeanGap: 300 * time.Microsecond, SLO: 200 * time.Millisecond, Base: 10 * time.Millisecond, PerItem: 3 * time.Millisecond, Jitter: 0.3},
		{Name: "short deadlines", Seed: 3, Requests: 1000, MeanGap: 2 * time.Millisecond, SLO: 200 * time.Millisecond, ShortShare: 0.3, Base: 5 * time.Millisecond, PerItem: time.Millisecond, Jitter: 0.1},
		{Name: "failures", Seed: 4, Requests: 600, MeanGap: 5 * time.Millisecond, SLO: 100 * time.Millisecond, Base: 20 * time.Millisecond, PerItem: 5 * time.Millisecond, Jitter: 0.5, FailEvery: 7},
		{Name: "long run for AIMD", Seed: 5, Requests: 20000, MeanGap: 10 * time.Millisecond, SLO: 200 * time.Millisecond, Base: 20 * time.Millisecond, PerItem: 4 * time.Millisecond, Jitter: 0.2},
	}
}

// Run checks the Policy contract for policies built by newPolicy (a fresh one per call) on every
// scenario: a decision never dispatches more than Len or more than MaxBatch, never dispatches
// from an empty queue, never waits without a Next after now and no later than the earliest
// deadline, every request leaves the queue by its deadline when the runtime asks at Next, and
// the same inputs give the same decisions (determinism).
func Run(t *testing.T, newPolicy func() batching.Policy, scenarios ...Scenario) {
	t.Helper()
	if len(scenarios) == 0 {
		scenarios = DefaultScenarios()
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			first := drive(t, newPolicy(), sc)
			second := drive(t, newPolicy(), sc)
			if !slices.Equal(first, second) {
				i := 0
				for i < min(len(first), len(second)) && first[i] == second[i] {
					i++
				}
				t.Fatalf("not deterministic: decision %d differs between two runs on the same inputs", i)
			}
		})
	}
}

type request struct {
	arrival, deadline time.Time
}

type completion struct {
	at       time.Time
	outcome  batching.Outcome
	arrivals []time.Time
}

// drive runs one scenario through p on a virtual clock with unlimited backend slots and
// returns every decision made, as a string, in order.
func drive(t *testing.T, p batching.Policy, sc Scenario) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(sc.Seed, 0x5105e))
	t0 := time.Unix(1_700_000_000, 0)
	reqs := make([]request, sc.Requests)
	at := t0
	for i := range reqs {
		at = at.Add(time.Duration(rng.ExpFloat64() * float64(sc.MeanGap)))
		d := sc.SLO
		if rng.Float64() < sc.ShortShare {
			d = sc.SLO / 2
		}
		reqs[i] = request{arrival: at, deadline: at.Add(d)}
	}

	var (
		log     []string
		queue   []request
		pending []completion // completions in flight, unordered
		wake    time.Time
		next    int // next arrival
		batches int
		now     = t0
	)
	for steps := 0; next < len(reqs) || len(queue) > 0 || len(pending) > 0; steps++ {
		if steps > 50*sc.Requests+1000 {
			t.Fatalf("no progress after %d steps: %d queued, %d in flight", steps, len(queue), len(pending))
		}
		// Next event: arrival, completion or wake-up, earliest first.
		ev := time.Time{}
		kind := ""
		if next < len(reqs) {
			ev, kind = reqs[next].arrival, "arrival"
		}
		ci := -1
		for i, c := range pending {
			if ev.IsZero() || c.at.Before(ev) {
				ev, kind, ci = c.at, "completion", i
			}
		}
		if !wake.IsZero() && (ev.IsZero() || wake.Before(ev)) {
			ev, kind = wake, "wake"
		}
		if ev.IsZero() {
			t.Fatalf("%d requests wait at %v with no event and no Next to wake the policy", len(queue), now)
		}
		if ev.Before(now) {
			t.Fatalf("time went backwards: %v after %v (%s)", ev, now, kind)
		}
		now = ev
		switch kind {
		case "arrival":
			queue = append(queue, reqs[next])
			next++
		case "completion":
			c := pending[ci]
			pending = slices.Delete(pending, ci, ci+1)
			c.outcome.Arrivals = c.arrivals
			p.Observe(c.outcome, now)
		case "wake":
			wake = time.Time{}
		}
		// Ask until the policy waits.
		for {
			q := snapshot(queue)
			d := p.Decide(q, now)
			log = append(log, fmt.Sprintf("%d %d %d %s", now.UnixNano(), d.Dispatch, d.Next.UnixNano(), d.Reason))
			if d.Reason == "" {
				t.Fatalf("at %v: decision %+v has no reason", now, d)
			}
			if d.Dispatch < 0 || d.Dispatch > q.Len {
				t.Fatalf("at %v: dispatch %d with %d waiting", now, d.Dispatch, q.Len)
			}
			if mb := p.MaxBatch(); d.Dispatch > mb || mb < 1 {
				t.Fatalf("at %v: dispatch %d above MaxBatch %d", now, d.Dispatch, mb)
			}
			if d.Dispatch == 0 {
				if q.Len == 0 {
					wake = time.Time{}
					break
				}
				if !d.Next.After(now) {
					t.Fatalf("at %v: waits with %d queued but Next %v is not after now", now, q.Len, d.Next)
				}
				if d.Next.After(q.EarliestDeadline) {
					t.Fatalf("at %v: waits until %v, past the earliest deadline %v", now, d.Next, q.EarliestDeadline)
				}
				wake = d.Next
				break
			}
			for _, r := range queue[:d.Dispatch] {
				if now.After(r.deadline) {
					t.Fatalf("at %v: request with deadline %v dispatched late", now, r.deadline)
				}
			}
			batches++
			svc := time.Duration(float64(sc.Base+sc.PerItem*time.Duration(d.Dispatch)) * (1 + sc.Jitter*(2*rng.Float64()-1)))
			arr := make([]time.Time, d.Dispatch)
			for i, r := range queue[:d.Dispatch] {
				arr[i] = r.arrival
			}
			pending = append(pending, completion{
				at:       now.Add(svc),
				arrivals: arr,
				outcome: batching.Outcome{Size: d.Dispatch, Dispatched: now, Completed: now.Add(svc),
					Failed: sc.FailEvery > 0 && batches%sc.FailEvery == 0},
			})
			queue = queue[d.Dispatch:]
			if len(queue) == 0 {
				wake = time.Time{}
				break
			}
			// Requests remain: a runtime asks again right after a dispatch.
		}
	}
	return log
}

// snapshot builds the Queue a runtime would pass for queue.
func snapshot(queue []request) batching.Queue {
	q := batching.Queue{Len: len(queue), Free: 1 << 20}
	if len(queue) == 0 {
		return q
	}
	q.Oldest = queue[0].arrival
	q.EarliestDeadline = queue[0].deadline
	for _, r := range queue[1:] {
		if r.deadline.Before(q.EarliestDeadline) {
			q.EarliestDeadline = r.deadline
		}
	}
	return q
}
