package gateway

import (
	"context"
	"errors"
	"fmt"
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
		g := newFaultGateway(t, hb, &fixedPolicy{Max: 2, Wait: time.Millisecond}, 200*time.Millisecond, 2)
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
		g := newFaultGateway(t, hb, &fixedPolicy{Max: 2, Wait: time.Millisecond}, 100*time.Millisecond, 1)
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
		g := newFaultGateway(t, fb, &fixedPolicy{Max: 2, Wait: time.Millisecond}, 50*time.Millisecond, 1)
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
