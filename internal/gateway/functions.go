package gateway

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/policy"
)

// A model's function tier (the serverless tier, provider.TierServerless) behind the gateway:
// BATCH's buffer (§III-B, the policy's Serverless.Batching) is a second batcher of the model
// whose batches are invocations of the tier (an Invoker: scale-to-zero worker processes billed
// per call), and MArk's Bouncer (§4.1) routes each request between the tiers with the one
// admission estimator's verdict on the VM queue (batcher.Admission): the policy's Router
// decides (sloserve's: the base-load tier, and a request the VM fleet cannot finish before its
// deadline spills to the functions). A request is refused (429 + Retry-After) only when the
// router rejects it or the function tier's buffer is full.

// Invoker runs one batch on a function instance of a model (local.FunctionTier.Invoke's shape):
// call is given the instance's OIP address.
type Invoker interface {
	Invoke(ctx context.Context, model string, memoryMB int, call func(ctx context.Context, addr string) error) error
}

// InvokerFunc adapts a function to Invoker.
type InvokerFunc func(ctx context.Context, model string, memoryMB int, call func(ctx context.Context, addr string) error) error

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, model string, memoryMB int, call func(ctx context.Context, addr string) error) error {
	return f(ctx, model, memoryMB, call)
}

// FunctionTier configures a model's function tier (AddFunctionTier).
type FunctionTier struct {
	// Invoker runs the invocations.
	Invoker Invoker
	// MemoryMB is each function instance's memory (BATCH's optimiser's choice).
	MemoryMB int
	// Policy is the tier's buffer (BATCH's (B, T), re-fitted online); the batcher owns it.
	Policy batching.Policy
	// Concurrency is the most invocations in flight (the tier's instance limit).
	Concurrency int
	// Route decides each request's tier from the VM queue's admission verdict (the policy's
	// Router); it must be safe for concurrent use. Nil spills exactly what admission refuses.
	Route func(r policy.Request, v policy.TierView, now time.Time) policy.Route
	// QueueLimit bounds the buffer (a full buffer answers 429); 0 means DefaultFunctionQueue
	// per unit of Concurrency.
	QueueLimit int
}

// fnTier is a model's running function tier.
type fnTier struct {
	b                  *batcher.Batcher
	route              func(r policy.Request, v policy.TierView, now time.Time) policy.Route
	spilled, served    atomic.Int64 // requests sent to the tier; answered by it without error
	rejected, admitted atomic.Int64 // refused by both tiers; admitted by the VM queue
	// why the refused were: the router, the function tier's deadline estimate, its full buffer
	byRouter, byDeadline, byFull atomic.Int64
}

// FunctionCounts are a model's routing counters since its function tier was added.
type FunctionCounts struct {
	// Spilled counts requests routed to the function tier, Served those it answered,
	// Rejected those refused by both tiers (429), VM those the VM queue took.
	Spilled, Served, Rejected, VM int64
	// RejectedByRouter, RejectedByDeadline and RejectedFull split Rejected: the router refused
	// (neither tier), the function tier estimated the answer after the deadline, its buffer was
	// full.
	RejectedByRouter, RejectedByDeadline, RejectedFull int64
}

// reasonFunctionTier is the verdict a spilled request joins the function tier's buffer with.
const reasonFunctionTier = "function tier: answer estimated before the deadline (BATCH's buffer guards the rest)"

// DefaultFunctionQueue is the function tier's buffer bound per unit of concurrency (requests):
// two buffers of sloserve's B_max (32) per instance.
const DefaultFunctionQueue = 64

// fnAddr is the address of the function tier's one virtual instance in its batcher.
const fnAddr = "function://tier"

// AddFunctionTier gives a served model a function tier; its buffer's batcher starts now.
func (g *Gateway) AddFunctionTier(model string, t FunctionTier) error {
	b, err := g.batcher(model)
	if err != nil {
		return err
	}
	switch {
	case t.Invoker == nil || t.Policy == nil:
		return fmt.Errorf("function tier of %s: invoker and policy must not be nil", model)
	case t.MemoryMB <= 0 || t.Concurrency <= 0:
		return fmt.Errorf("function tier of %s: memory_mb and concurrency must be > 0, got %d and %d", model, t.MemoryMB, t.Concurrency)
	}
	if t.QueueLimit <= 0 {
		t.QueueLimit = DefaultFunctionQueue * t.Concurrency
	}
	picker, err := dispatch.New(dispatch.DefaultName)
	if err != nil {
		return err
	}
	fb := batcher.New(batcher.Config{Model: batcher.Model{Name: model, SLO: b.SLO(), Policy: t.Policy, QueueLimit: t.QueueLimit,
		Slots: t.Concurrency, MaxBatchBytes: DefaultMaxBatchBytes}, Picker: picker,
		Backend: fnBackend{inv: t.Invoker, mem: t.MemoryMB, inner: g.backend}, Timeout: g.timeout, Log: g.log, Observer: nopObserver{}})
	go fb.Run()
	if err := fb.AddInstance(batcher.Instance{ID: "functions", Addr: fnAddr, Slots: t.Concurrency}); err != nil {
		return err
	}
	ft := &fnTier{b: fb, route: t.Route}
	if !b.fn.CompareAndSwap(nil, ft) {
		fb.Stop(context.Background())
		return fmt.Errorf("function tier of %s: already added", model)
	}
	g.log.Info("function tier added", "model", model, "memory_mb", t.MemoryMB, "concurrency", t.Concurrency)
	return nil
}

// FunctionCounts returns a model's routing counters; false without a function tier.
func (g *Gateway) FunctionCounts(model string) (FunctionCounts, bool) {
	b, err := g.batcher(model)
	if err != nil {
		return FunctionCounts{}, false
	}
	t := b.fn.Load()
	if t == nil {
		return FunctionCounts{}, false
	}
	return FunctionCounts{Spilled: t.spilled.Load(), Served: t.served.Load(), Rejected: t.rejected.Load(), VM: t.admitted.Load(),
		RejectedByRouter: t.byRouter.Load(), RejectedByDeadline: t.byDeadline.Load(), RejectedFull: t.byFull.Load()}, true
}

// FunctionControl runs f on the function tier's batcher goroutine, the owner of its buffer
// policy (e.g. to read BATCH's plans); false without a function tier.
func (g *Gateway) FunctionControl(model string, f func(now time.Time)) bool {
	b, err := g.batcher(model)
	if err != nil || b.fn.Load() == nil {
		return false
	}
	return b.fn.Load().b.Control(f)
}

// submitTiered routes a request of a model with a function tier: the VM queue's admission
// verdict, the router's decision, then the chosen tier's queue.
func (t *fnTier) submit(ctx context.Context, b *served, req *oip.InferenceRequest, rows, bytes int64, arrival time.Time, timeout time.Duration) (*oip.InferenceResponse, error) {
	now := time.Now()
	v := b.Admission(rows, timeout, arrival, now)
	route := policy.RouteVM
	if !v.Admit {
		route = policy.RouteServerless
	}
	if t.route != nil {
		route = t.route(policy.Request{Arrival: arrival, Deadline: arrival.Add(timeout)}, policy.TierView{Admission: v}, now)
	}
	switch route {
	case policy.RouteServerless:
		t.spilled.Add(1)
		in := t.admit(rows, timeout, arrival, now)
		resp, err := t.b.SubmitVerdict(ctx, req, rows, bytes, arrival, timeout, &in)
		switch {
		case err == nil:
			t.served.Add(1)
		case errors.Is(err, ErrCannotMeetDeadline): // a refusal too: test it first
			t.rejected.Add(1)
			t.byDeadline.Add(1)
		case isRefusal(err):
			t.rejected.Add(1)
			t.byFull.Add(1)
		}
		return resp, activatorRetry(err)
	case policy.RouteReject:
		t.rejected.Add(1)
		t.byRouter.Add(1)
		return nil, oip.WithRetryAfter(ErrCannotMeetDeadline, max(v.RetryAfter, time.Second))
	}
	t.admitted.Add(1)
	if !v.Admit {
		v.Admit = true // the router keeps it on the VM tier (nothing to spill to)
	}
	return b.SubmitVerdict(ctx, req, rows, bytes, arrival, timeout, &v)
}

// admit is the function tier's verdict on a spilled request: the one estimator's (Admission
// on the tier's own queue, batches of BATCH's B on its concurrency), but without the margin of
// one batch time the VM queue keeps — once B × a row's time nears half the SLO that margin
// refuses every request behind the first, where BATCH's buffer has its own deadline guard
// (dispatch by deadline − S(k)). A request is refused when its estimated answer is after its
// deadline (or, before any batch completed, beyond the estimator's cold bound).
func (t *fnTier) admit(rows int64, timeout time.Duration, arrival, now time.Time) admission.Verdict {
	v := t.b.Admission(rows, timeout, arrival, now)
	if !v.Admit && !v.Done.IsZero() && !v.Done.After(arrival.Add(timeout)) {
		v.Admit, v.Reason = true, reasonFunctionTier
	}
	return v
}

// activatorRetry gives a request the function tier's buffer gave up on a Retry-After: a 429
// (buffer full) keeps its hint, a 504 (its deadline passed while the instances were cold or
// busy) gets one second, as Knative's activator tells a client whose request timed out in its
// buffer to come back once the revision has scaled up.
func activatorRetry(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := oip.RetryAfter(err); ok || !errors.Is(err, oip.ErrDeadline) {
		return err
	}
	return oip.WithRetryAfter(err, time.Second)
}

// isRefusal reports a 429 of the function tier's own queue.
func isRefusal(err error) bool {
	return errors.Is(err, oip.ErrOverloaded) || errors.Is(err, batcher.ErrQueueFull)
}

// fnBackend sends a batch of the function tier as one invocation.
type fnBackend struct {
	inv   Invoker
	mem   int
	inner Backend
}

// Infer implements batcher.Backend: one invocation on a warm or cold-started instance.
func (f fnBackend) Infer(ctx context.Context, _ string, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	var out []*oip.InferenceResponse
	asked := time.Now()
	err := f.inv.Invoke(ctx, model, f.mem, func(ctx context.Context, addr string) error {
		// The wait for a free or cold-started instance is no cost of the batch (batcher.ReportStartDelay).
		batcher.ReportStartDelay(ctx, time.Since(asked))
		var err error
		out, err = f.inner.Infer(ctx, addr, model, reqs)
		return err
	})
	return out, err
}

// Metadata implements batcher.Backend; the model's VM batcher holds the metadata.
func (f fnBackend) Metadata(context.Context, string, string) (*oip.ModelMetadata, error) {
	return nil, fmt.Errorf("function tier: metadata is the VM tier's")
}

// Ready implements batcher.Checker: the tier itself is always there (its instances come and go).
func (fnBackend) Ready(context.Context, string) error { return nil }

// nopObserver discards the function tier batcher's measurements (the tier counts its own).
type nopObserver struct{}

func (nopObserver) QueueLength(int)                                        {}
func (nopObserver) BatchSize(int)                                          {}
func (nopObserver) InstanceCounts(int, int)                                {}
func (nopObserver) Answered(time.Duration, time.Duration)                  {}
func (nopObserver) Executed(int64, time.Duration, iter.Seq[time.Duration]) {}
