package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider/functions"
)

// coldRuntime is a functions.Runtime whose instances take coldStart to become ready (a pod
// scheduled and its worker loaded); they answer on the fake backend's address "fn".
type coldRuntime struct {
	coldStart time.Duration
	n         atomic.Int64
}

func (r *coldRuntime) Start(ctx context.Context, _ string, _ int) (string, string, error) {
	select {
	case <-time.After(r.coldStart):
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
	return fmt.Sprintf("fn-%d", r.n.Add(1)), "fn", nil
}
func (r *coldRuntime) Addr(context.Context, string) (string, error) { return "fn", nil }
func (r *coldRuntime) Stop(context.Context, string) error           { return nil }
func (r *coldRuntime) Enforcement() string                          { return "none" }
func (r *coldRuntime) Close() error                                 { return nil }

// activatorGateway is model m on one VM instance with every request routed to a function tier
// of one instance (the shared functions.Tier, scaled to zero, cold start coldStart), batches of
// 2 and a buffer of 4.
func activatorGateway(t *testing.T, slo, coldStart time.Duration) (*Gateway, *functions.Tier) {
	g := newTestGateway(t, &fakeBackend{service: func(int) time.Duration { return 40 * time.Millisecond }}, &fixedPolicy{Max: 1}, slo, 0, 1)
	ft, err := functions.New(functions.Config{Tier: cost.DefaultCatalog().Serverless, MaxInstances: 1, ReapEvery: 50 * time.Millisecond,
		RunGap: 100 * time.Millisecond, KeepAlive: func() keepalive.Policy { return &keepalive.Fixed{KeepAlive: time.Minute} }},
		&coldRuntime{coldStart: coldStart}, nil)
	if err != nil {
		t.Fatal(err)
	}
	inv := InvokerFunc(func(ctx context.Context, model string, mem int, call func(context.Context, string) error) error {
		_, err := ft.Invoke(ctx, model, mem, call)
		return err
	})
	spill := func(policy.Request, policy.TierView, time.Time) policy.Route { return policy.RouteServerless }
	if err := g.AddFunctionTier("m", FunctionTier{Invoker: inv, MemoryMB: 1769, Policy: &fixedPolicy{Max: 2, Wait: 5 * time.Millisecond},
		Concurrency: 1, QueueLimit: 4, Route: spill}); err != nil {
		t.Fatal(err)
	}
	return g, ft
}

// TestFunctionTierActivator: the function tier's buffer is its activator (Knative's, for a
// revision scaled to zero). With no instance warm, a burst of 8 requests with a 3 s SLO: the
// first batch (2) waits for the 2 s cold start, the buffer holds 4 more and releases them to
// the instance once it is ready — all 6 answered, none before the cold start ended — and the 2
// beyond the buffer are refused at once with 429 + Retry-After; requests = answered + refused.
// With a 1 s SLO and a 4 s cold start every buffered request is answered 504 with a
// Retry-After, but the cold start goes on: the instance is warm for the next request.
func TestFunctionTierActivator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, ft := activatorGateway(t, 3*time.Second, 2*time.Second)
		answers := fire(g, 8, 0)()
		ok, refused := 0, 0
		for _, a := range answers {
			switch {
			case a.Err == "":
				ok++
				if a.Latency < 2*time.Second || a.Latency > 3*time.Second {
					t.Errorf("%s answered after %v; want after the 2 s cold start, within the 3 s SLO", a.ID, a.Latency)
				}
			case strings.Contains(a.Err, "queue full") && a.Latency == 0:
				refused++
			default:
				t.Errorf("%s: %q after %v; want an answer or an immediate 429 (buffer full)", a.ID, a.Err, a.Latency)
			}
		}
		if ok != 6 || refused != 2 {
			t.Errorf("%d answered, %d refused; want 6 (a batch of 2 in the cold start + the buffer of 4) and 2", ok, refused)
		}
		c, _ := g.FunctionCounts("m")
		if c.Spilled != 8 || c.Served != 6 || c.Rejected != 2 || c.Served+c.Rejected != c.Spilled {
			t.Errorf("counts %+v; want 8 spilled = 6 served + 2 rejected", c)
		}
		if s := ft.Stats("m"); s.ColdStarts != 1 || s.ColdStartSeconds != 2 || s.Invocations != 3 || s.AfterColdStart != 1 || s.BilledGBSeconds <= 0 {
			t.Errorf("function stats %+v; want one 2 s cold start, 3 billed invocations, the first after the cold start", s)
		}
		_, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("over", 1), Arrival: time.Now()})
		if err != nil {
			t.Errorf("warm request: %v", err)
		}
		g.Close(context.Background())
		ft.Close()
	})
	synctest.Test(t, func(t *testing.T) {
		g, ft := activatorGateway(t, time.Second, 4*time.Second)
		answers := fire(g, 4, 0)()
		for _, a := range answers {
			if !strings.Contains(a.Err, "deadline") && !strings.Contains(a.Err, "in time") {
				t.Errorf("%s: %q after %v; want 504 (deadline passed during the cold start)", a.ID, a.Err, a.Latency)
			}
		}
		_, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("late", 1), Arrival: time.Now(), SLO: oip.RequestSLO{Timeout: 500 * time.Millisecond}})
		if after, hinted := oip.RetryAfter(err); oip.StatusOf(err) != http.StatusGatewayTimeout || !hinted || after <= 0 {
			t.Errorf("request buffered past its deadline during the cold start: %v; want 504 with a Retry-After", err)
		}
		time.Sleep(time.Second) // the 4 s cold start completes though its requests gave up
		if s := ft.Stats("m"); s.ColdStarts != 1 || s.Live != 1 {
			t.Errorf("after the cold start: %+v; want the instance started and live", s)
		}
		start := time.Now()
		if _, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("warm", 1), Arrival: start}); err != nil || time.Since(start) > 100*time.Millisecond {
			t.Errorf("next request: %v after %v; want answered by the warm instance", err, time.Since(start))
		}
		if s := ft.Stats("m"); s.ColdStarts != 1 {
			t.Errorf("cold starts %d; want 1 (the instance outlived the requests that triggered it)", s.ColdStarts)
		}
		g.Close(context.Background())
		ft.Close()
	})
}
