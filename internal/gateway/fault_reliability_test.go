package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// hangBackend is a fakeBackend whose hung addresses never answer (until the attempt's context
// ends), like a SIGSTOPped worker.
type hangBackend struct {
	*fakeBackend
	mu   sync.Mutex
	hung map[string]bool
	sent map[string]int
}

func (h *hangBackend) setHung(addr string, hung bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hung == nil {
		h.hung = map[string]bool{}
	}
	h.hung[addr] = hung
}

func (h *hangBackend) Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	h.mu.Lock()
	if h.sent == nil {
		h.sent = map[string]int{}
	}
	h.sent[addr]++
	hung := h.hung[addr]
	h.mu.Unlock()
	if hung {
		<-ctx.Done()
		return nil, fmt.Errorf("infer: %w", ctx.Err())
	}
	return h.fakeBackend.Infer(ctx, addr, model, reqs)
}

func (h *hangBackend) count(addr string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent[addr]
}

func newFaultGateway(t *testing.T, b Backend, pol *fixedPolicy, threshold time.Duration, instances int) *Gateway {
	t.Helper()
	g, err := New(Options{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: slo.Spec{Threshold: threshold, Target: 0.98}, Policy: pol, QueueLimit: 64}); err != nil {
		t.Fatal(err)
	}
	for i := range instances {
		if err := g.AddInstance(context.Background(), "m", Instance{ID: fmt.Sprintf("i%d", i), Addr: fmt.Sprintf("a%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func TestAttemptTimeout(t *testing.T) {
	now := time.Unix(1000, 0)
	slo := 200 * time.Millisecond
	for _, c := range []struct {
		name      string
		canRetry  bool
		batchTime time.Duration
		backend   time.Duration
		latest    time.Time
		want      time.Duration
	}{
		{"first attempt: slo/4 floor", true, 2 * time.Millisecond, 30 * time.Second, now.Add(slo), 50 * time.Millisecond},
		{"first attempt: 4 batch times", true, 40 * time.Millisecond, 30 * time.Second, now.Add(slo), 160 * time.Millisecond},
		{"first attempt, no estimate: last attempt's bound", true, 0, 30 * time.Second, now.Add(slo), 400 * time.Millisecond},
		{"last attempt: deadline + slo", false, 2 * time.Millisecond, 30 * time.Second, now.Add(100 * time.Millisecond), 300 * time.Millisecond},
		{"last attempt: backend timeout caps", false, 0, 250 * time.Millisecond, now.Add(slo), 250 * time.Millisecond},
		{"deadline long past: one slo", false, 0, 30 * time.Second, now.Add(-time.Hour), slo},
		{"first attempt capped by the last bound", true, time.Second, 30 * time.Second, now, slo},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := attemptTimeout(c.canRetry, c.batchTime, slo, c.backend, c.latest, now); got != c.want {
				t.Errorf("attemptTimeout (-want +got): -%v +%v", c.want, got)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	now := time.Unix(1000, 0)
	ms := time.Millisecond
	per := func(fixed time.Duration, perRow time.Duration) BatchCost {
		return BatchCost{Fixed: fixed, PerRowNS: float64(perRow)}
	}
	for _, c := range []struct {
		name     string
		f        AdmissionFacts
		deadline time.Duration
		admit    bool
		done     time.Duration
	}{
		{"no estimate yet: two rounds", AdmissionFacts{Queued: 2, MaxBatch: 1, Slots: 1}, ms, true, 0},
		{"no estimate yet: the batches in flight aside", AdmissionFacts{Queued: 2, MaxBatch: 1, Slots: 1, Busy: 1}, ms, true, 0},
		{"no estimate yet: not three", AdmissionFacts{Queued: 3, MaxBatch: 1, Slots: 1, Busy: 1}, time.Hour, false, 0},
		{"no instance usable: wait for one", AdmissionFacts{Queued: 1000, MaxBatch: 1, Cost: per(time.Second, 0)}, ms, true, 0},
		{"empty queue, free slot: always", AdmissionFacts{Queued: 1, Slots: 1, Cost: per(time.Hour, 0)}, ms, true, 0},
		{"empty queue, every slot busy: estimated", AdmissionFacts{Queued: 1, Slots: 1, Busy: 1, BusyLeft: 5 * ms, Cost: per(10*ms, 0), Budget: 40 * ms, Margin: 0.25},
			24 * ms, false, 15 * ms},
		{"one round and the margin fit", AdmissionFacts{Queued: 8, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0), Budget: 40 * ms, Margin: 0.25}, 20 * ms, true, 10 * ms},
		{"one round without the margin does not", AdmissionFacts{Queued: 8, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0), Budget: 40 * ms, Margin: 0.25}, 19 * ms, false, 10 * ms},
		{"margin scales with the budget", AdmissionFacts{Queued: 8, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0), Budget: 200 * ms, Margin: 0.25}, 59 * ms, false, 10 * ms},
		{"two rounds do not", AdmissionFacts{Queued: 9, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0)}, 25 * ms, false, 20 * ms},
		{"slots in parallel", AdmissionFacts{Queued: 16, MaxBatch: 8, Slots: 2, Cost: per(10*ms, 0)}, 25 * ms, true, 15 * ms},
		{"max batch 0 counts as 1", AdmissionFacts{Queued: 3, Slots: 1, Cost: per(10*ms, 0)}, 35 * ms, false, 30 * ms},
		{"batches in flight: their time left", AdmissionFacts{Queued: 8, MaxBatch: 2, Slots: 1, Busy: 1, BusyLeft: 4 * ms, Cost: per(10*ms, 0)}, 60 * ms, true, 44 * ms},
		{"per row: small batches stay cheap", AdmissionFacts{Queued: 4, QueuedRows: 4, Rows: 1, MaxBatch: 4, Slots: 1, Busy: 1, Cost: per(ms, ms/100)}, 10 * ms, true, ms + 40*time.Microsecond},
		{"per row: a large request is its rows", AdmissionFacts{Queued: 2, QueuedRows: 8001, Rows: 8000, MaxBatch: 4, Slots: 1, Busy: 1, Cost: per(ms, ms/100)}, 60 * time.Second, true, 81*ms + 10*time.Microsecond},
		{"per row: behind a large request", AdmissionFacts{Queued: 2, QueuedRows: 2, Rows: 1, MaxBatch: 1, Slots: 1, Busy: 1, BusyLeft: 80 * ms, Cost: per(ms, ms/100)}, 50 * ms, false, 82*ms + 20*time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Admit(c.f, now.Add(c.deadline), now)
			var done time.Duration
			if !a.Done.IsZero() {
				done = a.Done.Sub(now)
			}
			if a.Admit != c.admit || done != c.done {
				t.Errorf("Admit (-want +got): -%v %v +%v %v (%s)", c.admit, c.done, a.Admit, done, a.Reason)
			}
			if !a.Admit && a.RetryAfter < time.Second {
				t.Errorf("RetryAfter of a refusal = %v, want ≥ 1 s", a.RetryAfter)
			}
		})
	}
}

// The cost fit: per row once batch sizes vary, so one large batch moves the slope rather than
// the time of small batches; half fixed, half per row while every batch had the same rows; and a
// worker whose batch times swing is not taken for fast by its last run of quick batches.
func TestCostFit(t *testing.T) {
	var f estimator
	for range 20 {
		f.observe(1, 2*time.Millisecond)
	}
	if got := f.cost().Of(1); got != 2*time.Millisecond {
		t.Errorf("one size seen: cost of its rows = %v, want 2ms", got)
	}
	if got := f.cost().Of(8); got <= 2*time.Millisecond {
		t.Errorf("one size seen: 8 rows cost %v, want more than 1 row's", got)
	}
	f.observe(8000, 2*time.Second) // one huge batch: 2 ms + 0.25 ms per row
	if got := f.cost().Of(1); got > 3*time.Millisecond {
		t.Errorf("after one 8,000-row batch, a 1-row batch is estimated at %v, want ≈ 2 ms", got)
	}
	if got := f.cost().Of(8000); got < time.Second || got > 3*time.Second {
		t.Errorf("after one 8,000-row batch, 8,000 rows are estimated at %v, want ≈ 2 s", got)
	}
	var g estimator
	for i := range 400 { // 1 ms + 0.1 ms per row, rows 1..4
		r := int64(1 + i%4)
		g.observe(r, time.Millisecond+time.Duration(r)*100*time.Microsecond)
	}
	c := g.cost()
	if d := c.Fixed - time.Millisecond; d < -time.Microsecond || d > time.Microsecond || c.PerRowNS < 99e3 || c.PerRowNS > 101e3 {
		t.Errorf("fit of 1 ms + 0.1 ms/row: %+v", c)
	}
	var h estimator // runs of ten 0.4 ms batches between ten of 20 ms: 10.2 ms on average
	for i := range 400 {
		d := 20 * time.Millisecond
		if i%20 >= 10 {
			d = 400 * time.Microsecond
		}
		h.observe(1, d)
	}
	if got := h.cost().Of(1); got < 8*time.Millisecond {
		t.Errorf("after a run of quick batches of a swinging worker (10.2 ms on average), a batch is estimated at %v, want ≥ 8 ms", got)
	}
}

// warm sends one batch so that the batcher has measured a batch time.
func warm(t *testing.T, g *Gateway) {
	t.Helper()
	for _, a := range fire(g, 1, 0)() {
		if a.Err != "" {
			t.Fatalf("warm-up request: %s", a.Err)
		}
	}
}

// A batch sent to a hung instance is abandoned after its hang timeout (slo/4 here) and answered
// by the other instance; the hung instance then takes no batch for downFor.
func TestHungInstanceBatchRetriedElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hb := &hangBackend{fakeBackend: &fakeBackend{service: func(int) time.Duration { return 2 * time.Millisecond }}}
		g := newFaultGateway(t, hb, &fixedPolicy{max: 2, wait: time.Millisecond}, 200*time.Millisecond, 2)
		warm(t, g)
		warm(t, g)
		hb.setHung("a0", true)
		hb.setHung("a1", true)
		hb.setHung("a1", false)
		before := hb.count("a0")
		got := fire(g, 2, 0)()
		for _, a := range got {
			if a.Err != "" {
				t.Errorf("request %s: %s, want an answer from the healthy instance", a.ID, a.Err)
			}
		}
		if hb.count("a0") == before {
			// The picker sent the batch to the healthy instance first: nothing was retried.
			t.Logf("batch went to a1 directly: %+v", got)
		} else if want := 50*time.Millisecond + 2*time.Millisecond; got[0].Latency != want {
			t.Errorf("latency of a batch retried after a hang (-want +got): -%v +%v", want, got[0].Latency)
		}
		// Every batch within downFor goes to a1.
		n0 := hb.count("a0")
		for range 5 {
			fire(g, 2, 0)()
		}
		if hb.count("a0") != n0 {
			t.Errorf("batches sent to the hung instance while it rests: %d", hb.count("a0")-n0)
		}
		g.Close(context.Background())
	})
}

// With no other instance, a batch is not given up early: its one attempt runs until the latest
// deadline of its requests plus one SLO, then answers 504 — one answer, never a client left
// waiting for the backend timeout, and no slow batch cut short for a retry that has nowhere to go.
func TestHungOnlyInstanceWaitsForDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hb := &hangBackend{fakeBackend: &fakeBackend{service: func(int) time.Duration { return 2 * time.Millisecond }}}
		g := newFaultGateway(t, hb, &fixedPolicy{max: 2, wait: time.Millisecond}, 100*time.Millisecond, 1)
		warm(t, g)
		hb.setHung("a0", true)
		start := time.Now()
		got := fire(g, 2, 0)()
		for _, a := range got {
			if !strings.Contains(a.Err, "did not answer the batch in time") {
				t.Errorf("request %s: %q, want the batch timeout", a.ID, a.Err)
			}
		}
		if el, want := time.Since(start), 200*time.Millisecond; el != want {
			t.Errorf("time to answer (-want +got): -%v +%v", want, el)
		}
		_, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("x", 1), Arrival: time.Now()})
		if code := oip.StatusOf(err); code != http.StatusGatewayTimeout && code != http.StatusServiceUnavailable {
			t.Errorf("status while the only instance hangs: %d (%v), want 504 or 503", code, err)
		}
		g.Close(context.Background())
	})
}

// Admission by deadline: with one slot, batches of 2 and 10 ms per batch whatever its rows, a
// 50 ms SLO admits the 6 requests that 3 rounds serve with a margin of a quarter of the SLO
// (12.5 ms, the miss controller's start), and refuses the rest at once with 429 + Retry-After;
// every admitted request meets its deadline.
func TestAdmissionByDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 10 * time.Millisecond }}
		g := newFaultGateway(t, fb, &fixedPolicy{max: 2, wait: time.Millisecond}, 50*time.Millisecond, 1)
		warm(t, g)
		fire(g, 2, 0)() // a batch of 2 rows: the fit learns the time does not grow with rows
		got := fire(g, 20, 0)()
		ok, refused := 0, 0
		for i, a := range got {
			switch {
			case a.Err == "":
				ok++
				if a.Latency > 50*time.Millisecond {
					t.Errorf("admitted request %d answered after %v, past its 50 ms deadline", i, a.Latency)
				}
			case strings.Contains(a.Err, "cannot be served before the deadline"):
				refused++
				if a.Latency != 0 {
					t.Errorf("refused request %d waited %v, want an answer at arrival", i, a.Latency)
				}
			default:
				t.Errorf("request %d: %s", i, a.Err)
			}
		}
		if ok != 6 || refused != 14 {
			t.Errorf("admitted, refused (-want +got): -6 14 +%d %d", ok, refused)
		}
		g.Close(context.Background())
	})
	if code := oip.StatusOf(ErrCannotMeetDeadline); code != http.StatusTooManyRequests {
		t.Errorf("status of ErrCannotMeetDeadline (-want +got): -429 +%d", code)
	}
	if ra, ok := oip.RetryAfter(oip.WithRetryAfter(ErrCannotMeetDeadline, time.Second)); !ok || ra != time.Second {
		t.Errorf("Retry-After hint lost: %v %v", ra, ok)
	}
	if !errors.Is(ErrBatchTimeout, oip.ErrDeadline) {
		t.Errorf("ErrBatchTimeout does not map to 504")
	}
}

// The miss controller raises the margin on deadline misses and lowers it slowly on requests in
// time, settling where missTarget of them miss, within [marginFloor, marginCap]; between outcomes
// it relaxes towards the floor.
func TestMissControl(t *testing.T) {
	var m missControl
	now := time.Unix(1000, 0)
	if got := m.outcome(false, now); got >= marginStart {
		t.Errorf("after one request in time: %v, want below the start %v", got, marginStart)
	}
	for range 100 {
		m.outcome(true, now)
	}
	if m.frac != marginCap {
		t.Errorf("after 100 misses: %v, want the cap %v", m.frac, marginCap)
	}
	if got := m.outcome(false, now.Add(marginRelax)); got > marginFloor+(marginCap-marginFloor)/math.E+1e-9 {
		t.Errorf("one relaxation time later: %v, want ≤ floor + (cap − floor)/e", got)
	}
	now = now.Add(marginRelax)
	for range 100000 {
		m.outcome(false, now)
	}
	if m.frac != marginFloor {
		t.Errorf("after 100,000 requests in time: %v, want the floor %v", m.frac, marginFloor)
	}
	// At the target miss rate, outcomes at one instant, the fraction stays put on average.
	m.frac = 0.5
	every := int(math.Round(1 / missTarget))
	for i := range 100000 {
		m.outcome(i%every == 0, now)
	}
	if m.frac < 0.4 || m.frac > 0.6 {
		t.Errorf("at the target miss rate (one in %d) the fraction drifted from 0.5 to %v", every, m.frac)
	}
}

// An answered request counts against the margin when it overran admission's estimate by more
// than the margin, whether or not it then missed its deadline; one admitted without an estimate
// only when it missed.
func TestBeyondMargin(t *testing.T) {
	var e estimator
	e.margin.Store(math.Float64bits(0.2))
	e.batches.Store(overrunWarmup)
	t0 := time.Unix(1000, 0)
	c := &call{arrival: t0, deadline: t0.Add(200 * time.Millisecond), expect: t0.Add(50 * time.Millisecond)}
	for _, tc := range []struct {
		done time.Duration
		want bool
	}{{50 * time.Millisecond, false}, {90 * time.Millisecond, false}, {91 * time.Millisecond, true}, {10 * time.Millisecond, false}} {
		if got := e.beyondMargin(c, t0.Add(tc.done)); got != tc.want {
			t.Errorf("estimate 50 ms, margin 0.2 × 200 ms, answered at %v: beyond = %v, want %v", tc.done, got, tc.want)
		}
	}
	if e.beyondMargin(&call{arrival: t0, deadline: t0.Add(200 * time.Millisecond)}, t0.Add(time.Second)) {
		t.Error("admitted without an estimate: beyond the margin, want not (its deadline decides)")
	}
	var cold estimator
	cold.margin.Store(math.Float64bits(0.2))
	if cold.beyondMargin(c, t0.Add(time.Second)) {
		t.Errorf("before %d batches: beyond the margin, want not (a cold fit overruns by design)", overrunWarmup)
	}
}
