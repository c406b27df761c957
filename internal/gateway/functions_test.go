package gateway

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/policy"
)

// fakeInvoker runs each invocation on the fake backend at address "fn", counting them.
type fakeInvoker struct{ calls atomic.Int64 }

func (f *fakeInvoker) Invoke(ctx context.Context, _ string, _ int, call func(context.Context, string) error) error {
	f.calls.Add(1)
	return call(ctx, "fn")
}

// TestFunctionTierBouncer: with one VM instance taking 40 ms per batch of one and a 100 ms SLO,
// the VM queue's admission verdict (the one estimator) refuses what the instance cannot finish
// in time; the Bouncer sends it through the function tier's buffer instead of 429, so every
// request of the burst is answered. A router that rejects answers 429 with Retry-After.
func TestFunctionTierBouncer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 40 * time.Millisecond }}
		g := newTestGateway(t, fb, &fixedPolicy{Max: 1}, 100*time.Millisecond, 0, 1)
		b, _ := g.batcher("m")
		b.SeedCost(BatchCost{Fixed: 40 * time.Millisecond})
		inv := &fakeInvoker{}
		if err := g.AddFunctionTier("m", FunctionTier{Invoker: inv, MemoryMB: 1769, Policy: &fixedPolicy{Max: 4, Wait: 5 * time.Millisecond},
			Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
		answers := fire(g, 8, 0)()
		for _, a := range answers {
			if a.Err != "" {
				t.Errorf("%s: %s; want every request answered (spilled, not refused)", a.ID, a.Err)
			}
		}
		c, _ := g.FunctionCounts("m")
		if c.VM < 1 || c.Spilled < 4 || c.Served != c.Spilled || c.Rejected != 0 || c.VM+c.Spilled != 8 {
			t.Errorf("routing %+v; want the VM queue to keep what it finishes in time and the rest spilled", c)
		}
		if inv.calls.Load() == 0 || inv.calls.Load() > c.Spilled {
			t.Errorf("invocations %d for %d spilled requests; want batches of the buffer", inv.calls.Load(), c.Spilled)
		}
		g.Close(context.Background())
	})
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 40 * time.Millisecond }}
		g := newTestGateway(t, fb, &fixedPolicy{Max: 1}, 100*time.Millisecond, 0, 1)
		b, _ := g.batcher("m")
		b.SeedCost(BatchCost{Fixed: 40 * time.Millisecond})
		reject := func(r policy.Request, v policy.TierView, now time.Time) policy.Route {
			if v.Admission.Admit {
				return policy.RouteVM
			}
			return policy.RouteReject
		}
		if err := g.AddFunctionTier("m", FunctionTier{Invoker: &fakeInvoker{}, MemoryMB: 1769, Policy: &fixedPolicy{Max: 4},
			Concurrency: 4, Route: reject}); err != nil {
			t.Fatal(err)
		}
		answers := fire(g, 8, 0)()
		refused := 0
		for _, a := range answers {
			if strings.Contains(a.Err, "deadline") {
				refused++
			}
		}
		_, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("x", 1), Arrival: time.Now()})
		if refused == 0 || err != nil && !errors.Is(err, oip.ErrOverloaded) {
			t.Errorf("refused %d, late call %v; want 429s (ErrOverloaded) from a rejecting router", refused, err)
		}
		g.Close(context.Background())
	})
}
