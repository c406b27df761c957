package batcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/telemetry"
)

// call is one request waiting for its answer.
type call struct {
	ctx      context.Context
	req      *oip.InferenceRequest
	rows     int64 // the request's rows (its first dimension)
	bytes    int64 // the request's tensor data, in bytes (oip.RequestBytes)
	arrival  time.Time
	deadline time.Time
	expect   time.Time   // admission's estimate of its answer (Admission.Done); zero when unknown
	done     chan result // buffered (1): the batcher never blocks on a departed client
	// lead receives the batch this call leads (buffered, 1): the batcher hands a batch to the
	// goroutine of its first request, which is waiting anyway, instead of starting one.
	lead  chan *flight
	state atomic.Int32 // callWaiting → callLeading (batcher) or callAbandoned (client gone)
	tries int          // batches this call was sent in; owned by the batcher goroutine
	// bounces counts the batches of this call an instance refused as busy (bounce); owned by
	// the batcher goroutine.
	bounces int
}

// Call states, for the hand-over of a batch to its first request's goroutine.
const (
	callWaiting int32 = iota
	callLeading
	callAbandoned
)

// result is delivered exactly once per call.
type result struct {
	resp *oip.InferenceResponse
	err  error
}

// compatible reports whether a's inputs can be concatenated with b's along the batch dimension.
func compatible(a, b *oip.InferenceRequest) bool {
	if len(a.Inputs) != len(b.Inputs) {
		return false
	}
	for i := range a.Inputs {
		x, y := &a.Inputs[i], &b.Inputs[i]
		if x.Name != y.Name || x.Datatype != y.Datatype || len(x.Shape) != len(y.Shape) || len(x.Shape) == 0 {
			return false
		}
		for j := 1; j < len(x.Shape); j++ {
			if x.Shape[j] != y.Shape[j] {
				return false
			}
		}
	}
	return true
}

// backendInst is an instance as the batcher tracks it.
type backendInst struct {
	Instance
	outstanding int
	// weight is the instance's dispatch weight (dispatch.Instance.Weight): 1 until SetWeights.
	weight   float64
	draining bool
	drained  chan struct{} // closed when a draining instance has no batch in flight
	// downUntil is set when the instance could not be reached: it takes no batch before then
	// (a crashed worker, until the provider restarts it and Sync replaces it).
	downUntil time.Time
	// busyUntil is set when the instance answered a batch busy (429/503, its own concurrency
	// limit shared with other gateway replicas): it counts no free slot before then (bounce).
	busyUntil time.Time
	// busyStreak counts its busy answers since its last completed batch (busyBackoff).
	busyStreak int
	// flights are the batches in flight on the instance, for the admission estimate.
	flights []*flight
}

// usable reports whether the instance may take new batches at now.
func (in *backendInst) usable(now time.Time) bool {
	return !in.draining && !now.Before(in.downUntil)
}

// flight is one batch in flight.
type flight struct {
	inst       *backendInst
	calls      []*call
	rows       int64         // rows of the batch
	expect     time.Duration // its estimated round trip at dispatch (BatchCost.Of(rows))
	dispatched time.Time
	completed  time.Time
	failed     bool
	// retry is set by send when the instance was unreachable and every request of the batch
	// may be tried again: the batcher then puts them back at the head of the queue.
	retry    bool
	canRetry bool
	busy     bool  // the instance refused the batch as busy (429/503): bounce it, nothing ran
	hung     bool  // the instance did not answer the last attempt in time (no retry left)
	alive    bool  // after a timeout, the instance still answered its health check: not benched
	err      error // the answer for every request when a retry is not possible
	// startDelay is what the backend waited before running the batch (ReportStartDelay).
	startDelay time.Duration
}

// Retrying batches that could not reach their instance.
const (
	// maxTries is how many times a request is sent before an unreachable instance fails it.
	maxTries = 2
	// DownFor is how long an unreachable instance takes no batch.
	DownFor = time.Second
)

// Batcher owns one model's queue. Its run goroutine is the only one that touches the queue,
// the instances and the policy: the size-or-deadline loop with a resettable timer of
// prometheus storage/remote/queue_manager.go's runShard, with the decisions delegated to a
// batching.Policy (Decide on arrival, completion and timer; Observe on completion).
type Batcher struct {
	backend Backend
	timeout time.Duration // bounds every attempt (Config.Timeout)
	log     *slog.Logger
	obs     Observer
	name    string
	spec    slo.Spec
	policy  batching.Policy
	limit   int
	slots   int
	bytes   int64 // the largest batch, in tensor bytes (Model.MaxBatchBytes)
	maxRows int64 // the most rows of one request (Model.MaxRows); 0: no bound
	picker  dispatch.Picker
	md      atomic.Pointer[oip.ModelMetadata]

	batches, dispatched atomic.Int64 // for Stats
	bounces             atomic.Int64 // batches refused busy by an instance (Bounces)
	est                 estimator    // batch time, max batch and slots, for admission and timeouts

	in          chan *call
	ctrl        chan func(now time.Time)
	completions chan *flight
	queued      atomic.Int64 // calls in `in` plus calls in q
	users       atomic.Int64 // Infer calls of a repository model holding this batcher (RemoveModel waits for 0)

	mu     sync.RWMutex // guards closed against sends on `in`
	closed bool
	quit   chan struct{}
	exited chan struct{}
	failed int // waiting calls failed at shutdown, set before exited closes

	// Owned by run.
	q        []*call
	insts    []*backendInst
	timer    *time.Timer
	snap     []dispatch.Instance
	arrivals []time.Time
	ctx      context.Context
	cancel   context.CancelFunc
	flights  sync.WaitGroup
}

// New returns the batcher of c.Model (validated by the caller, its limits defaulted); Run starts
// its goroutine.
func New(c Config) *Batcher {
	m := c.Model
	b := &Batcher{
		backend: c.Backend, timeout: c.Timeout, log: c.Log, obs: c.Observer,
		name: m.Name, spec: m.SLO, policy: m.Policy, limit: m.QueueLimit, slots: m.Slots, picker: c.Picker,
		bytes: m.MaxBatchBytes, maxRows: m.MaxRows,
		in:          make(chan *call, m.QueueLimit),
		ctrl:        make(chan func(time.Time)),
		completions: make(chan *flight, 64),
		quit:        make(chan struct{}),
		exited:      make(chan struct{}),
		q:           make([]*call, 0, m.QueueLimit),
		arrivals:    make([]time.Time, 0, 64),
	}
	if m.Metadata != nil {
		md := *m.Metadata
		md.Name = m.Name
		b.md.Store(&md)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

// enter counts a call into the queue's totals; leave takes it out.
func (b *Batcher) enter(c *call) int64 {
	b.est.rows.Add(c.rows)
	return b.queued.Add(1)
}

func (b *Batcher) leave(c *call) {
	b.queued.Add(-1)
	b.est.rows.Add(-c.rows)
}

// Submit queues req (rows rows, bytes bytes of tensor data) and waits for its answer (or for
// ctx to end). The request's deadline is arrival + timeout.
func (b *Batcher) Submit(ctx context.Context, req *oip.InferenceRequest, rows, bytes int64, arrival time.Time, timeout time.Duration) (*oip.InferenceResponse, error) {
	return b.SubmitVerdict(ctx, req, rows, bytes, arrival, timeout, nil)
}

// Admission is the one admission estimator's verdict (admission.Admit) on a request of rows
// rows arriving at now with the given time budget, were it queued now; a refusal that may go
// through as a probe is an admission. A gateway routing between tiers (MArk's Bouncer: spill
// what the VM fleet cannot finish in time) asks it, then submits with SubmitVerdict.
func (b *Batcher) Admission(rows int64, timeout time.Duration, arrival, now time.Time) admission.Verdict {
	a := admission.Admit(b.est.facts(int(b.queued.Load())+1, max(rows, 1), timeout, now), arrival.Add(timeout), now)
	if !a.Admit && b.est.probe(now) {
		a.Admit = true
	}
	return a
}

// SubmitVerdict is Submit with the admission verdict already taken (Admission), or taken
// here when v is nil. A refused verdict is answered ErrCannotMeetDeadline (429).
func (b *Batcher) SubmitVerdict(ctx context.Context, req *oip.InferenceRequest, rows, bytes int64, arrival time.Time, timeout time.Duration, v *admission.Verdict) (*oip.InferenceResponse, error) {
	c := &call{ctx: ctx, req: req, rows: max(rows, 1), bytes: bytes, arrival: arrival, deadline: arrival.Add(timeout),
		done: make(chan result, 1), lead: make(chan *flight, 1)}
	if b.enter(c) > int64(b.limit) {
		b.leave(c)
		return nil, ErrQueueFull
	}
	var a admission.Verdict
	if v != nil {
		a = *v
	} else {
		now := time.Now()
		a = admission.Admit(b.est.facts(int(b.queued.Load()), c.rows, timeout, now), c.deadline, now)
		a.Admit = a.Admit || b.est.probe(now)
	}
	if !a.Admit {
		b.leave(c)
		return nil, oip.WithRetryAfter(ErrCannotMeetDeadline, a.RetryAfter)
	}
	c.expect = a.Done
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		b.leave(c)
		return nil, ErrShuttingDown
	}
	b.in <- c // never blocks: queued ≤ limit = cap(in)
	b.mu.RUnlock()
	for {
		select {
		case r := <-c.done:
			return r.resp, r.err
		case f := <-c.lead:
			b.send(f) // answers c.done, unless the batch goes back to the queue
		case <-ctx.Done():
			if !c.state.CompareAndSwap(callWaiting, callAbandoned) {
				// The batcher made this call lead a batch: run it before leaving, so that the
				// batch's other requests are answered (or wait for the answer that ends it).
				select {
				case f := <-c.lead:
					b.send(f)
				case <-c.done:
				}
			}
			return nil, ctx.Err()
		}
	}
}

// Control runs f on the batcher goroutine; it reports false when the batcher has stopped.
func (b *Batcher) Control(f func(now time.Time)) bool {
	select {
	case b.ctrl <- f:
		return true
	case <-b.exited:
		return false
	}
}

// Run is the batcher goroutine; the caller starts it once (go b.Run()).
func (b *Batcher) Run() {
	defer close(b.exited)
	b.timer = time.NewTimer(time.Hour)
	b.timer.Stop()
	for {
		select {
		case c := <-b.in:
			b.q = append(b.q, c)
			for more := true; more; { // take every arrival already waiting, then decide once
				select {
				case c := <-b.in:
					b.q = append(b.q, c)
				default:
					more = false
				}
			}
		case f := <-b.completions:
			b.complete(f)
		case f := <-b.ctrl:
			f(time.Now())
		case <-b.timer.C:
		case <-b.quit:
			b.shutdown()
			return
		}
		b.step(time.Now())
	}
}

// step expires overdue requests, then asks the policy until it says wait or no slot is free,
// and arms the timer for the policy's next question or the earliest deadline.
func (b *Batcher) step(now time.Time) {
	earliest := b.expire(now)
	var next time.Time
	for len(b.q) > 0 {
		if b.ownBatch(now) {
			earliest = b.earliestDeadline()
			continue
		}
		q := batching.Queue{Len: len(b.q), Oldest: b.q[0].arrival, EarliestDeadline: earliest, Free: b.free(now)}
		d := b.policy.Decide(q, now)
		if d.Dispatch > 0 && q.Free == 0 {
			// Hold the batch until a completion frees a slot (which asks again); the policy's
			// Next would only spin while every slot is busy.
			next = time.Time{}
			break
		}
		next = d.Next
		if d.Dispatch <= 0 {
			break
		}
		if !b.dispatch(min(d.Dispatch, len(b.q)), now) {
			next = time.Time{}
			break
		}
		earliest = b.earliestDeadline()
	}
	b.obs.QueueLength(len(b.q))
	maxBatch := b.policy.MaxBatch()
	for _, in := range b.insts {
		if in.MaxWait > 0 && in.usable(now) {
			maxBatch = max(maxBatch, in.MaxBatch) // an instance batching on its own takes its b
		}
	}
	b.est.maxBatch.Store(int64(maxBatch))
	slots, busy, left := 0, 0, time.Duration(0)
	for _, in := range b.insts {
		if in.usable(now) {
			slots += in.Slots
			busy += in.outstanding
			for _, f := range in.flights {
				// A batch past its estimate is expected to need as long again as it overran.
				d := f.dispatched.Add(f.expect).Sub(now)
				left += max(d, -d)
			}
		}
	}
	b.est.slots.Store(int64(slots))
	b.est.busy.Store(int64(busy))
	b.est.busyLeft.Store(int64(left))
	b.est.busyAt.Store(now.UnixNano())
	wake := next
	if !earliest.IsZero() && (wake.IsZero() || earliest.Before(wake)) {
		wake = earliest
	}
	if own := b.ownWake(now); !own.IsZero() && (wake.IsZero() || own.Before(wake)) {
		wake = own
	}
	for _, in := range b.insts { // an instance coming back from down or busy frees slots
		for _, t := range [...]time.Time{in.downUntil, in.busyUntil} {
			if now.Before(t) && (wake.IsZero() || t.Before(wake)) {
				wake = t
			}
		}
	}
	if wake.IsZero() || len(b.q) == 0 {
		b.timer.Stop()
		return
	}
	b.timer.Reset(max(wake.Sub(now), 0))
}

// expire answers waiting requests whose deadline has passed (504) or whose client has gone,
// keeping the others in order, and returns the earliest remaining deadline.
func (b *Batcher) expire(now time.Time) time.Time {
	var earliest time.Time
	kept := b.q[:0]
	for _, c := range b.q {
		switch {
		case !now.Before(c.deadline):
			c.done <- result{err: fmt.Errorf("%w: waited %v", ErrDeadline, now.Sub(c.arrival))}
			b.leave(c)
			b.est.outcome(true, now)
		case c.ctx.Err() != nil:
			c.done <- result{err: c.ctx.Err()} // ends a goroutine waiting to lead; never read otherwise
			b.leave(c)
		default:
			kept = append(kept, c)
			if earliest.IsZero() || c.deadline.Before(earliest) {
				earliest = c.deadline
			}
		}
	}
	clear(b.q[len(kept):])
	b.q = kept
	return earliest
}

func (b *Batcher) earliestDeadline() time.Time {
	var earliest time.Time
	for _, c := range b.q {
		if earliest.IsZero() || c.deadline.Before(earliest) {
			earliest = c.deadline
		}
	}
	return earliest
}

// free is the number of batches the model's instances can take now.
func (b *Batcher) free(now time.Time) int {
	n := 0
	for _, in := range b.insts {
		if in.MaxWait == 0 && in.usable(now) && !now.Before(in.busyUntil) && in.outstanding < in.Slots {
			n += in.Slots - in.outstanding
		}
	}
	return n
}

// dispatch sends the oldest n waiting requests (the longest prefix whose tensors can be
// concatenated) as one batch to the instance the dispatch picker chooses among those the
// model's policy batches for (no MaxWait of their own); false means the picker chose none.
func (b *Batcher) dispatch(n int, now time.Time) bool {
	return b.dispatchTo(n, now, func(in *backendInst) bool { return in.MaxWait == 0 })
}

// ownBatch dispatches one batch to an instance that batches on its own (Instance.MaxWait > 0,
// INFless's built-in batch queue with b = MaxBatch and timeout t_slo − t_exec) whose batch is
// due: the queue holds its b, or the oldest request has waited its timeout. Several due
// instances are chosen among by the dispatch picker (their α-band weights). It returns false
// when none is due, and otherwise the time the next one falls due is re-evaluated by the caller.
func (b *Batcher) ownBatch(now time.Time) bool {
	if len(b.q) == 0 {
		return false
	}
	waited := now.Sub(b.q[0].arrival)
	due := func(in *backendInst) bool {
		return in.MaxWait > 0 && (len(b.q) >= max(in.MaxBatch, 1) || waited >= in.MaxWait)
	}
	// A plain scan first: on the request path of a model without such instances (every policy
	// but infless) this is all it costs — no picker snapshot.
	if !slices.ContainsFunc(b.insts, due) {
		return false
	}
	return b.dispatchTo(len(b.q), now, due)
}

// ownWake is when the oldest waiting request's wait reaches the batch timeout of a free instance
// that batches on its own; zero when there is none.
func (b *Batcher) ownWake(now time.Time) time.Time {
	if len(b.q) == 0 {
		return time.Time{}
	}
	var wake time.Time
	for _, in := range b.insts {
		if in.MaxWait > 0 && in.usable(now) && !now.Before(in.busyUntil) && in.outstanding < in.Slots {
			if t := b.q[0].arrival.Add(in.MaxWait); wake.IsZero() || t.Before(wake) {
				wake = t
			}
		}
	}
	return wake
}

// dispatchTo is dispatch over the instances eligible says may take the batch.
func (b *Batcher) dispatchTo(n int, now time.Time, eligible func(*backendInst) bool) bool {
	b.snap = b.snap[:0]
	for _, in := range b.insts {
		free := in.Slots - in.outstanding
		if !in.usable(now) || now.Before(in.busyUntil) || free < 0 || !eligible(in) {
			free = 0
		}
		b.snap = append(b.snap, dispatch.Instance{ID: in.ID, Free: free, Outstanding: in.outstanding, Weight: in.weight})
	}
	k := b.picker.Pick(b.snap)
	if k < 0 || k >= len(b.insts) || b.snap[k].Free <= 0 {
		return false // the picker found no eligible instance; keep the requests queued
	}
	inst := b.insts[k]
	if inst.MaxBatch > 0 {
		n = min(n, inst.MaxBatch) // the instance's own N_batch (INFless non-uniform batching)
	}
	first := b.q[0].req
	take, size := 1, b.q[0].bytes
	// The batch closes before a request that does not concatenate with the first, or that would
	// take it past the largest batch the instance accepts (a large request goes alone).
	for take < n && compatible(b.q[take].req, first) && (b.bytes <= 0 || size+b.q[take].bytes <= b.bytes) {
		size += b.q[take].bytes
		take++
	}
	calls := make([]*call, take)
	copy(calls, b.q[:take])
	rest := copy(b.q, b.q[take:])
	clear(b.q[rest:])
	b.q = b.q[:rest]
	var rows int64
	for _, c := range calls {
		b.leave(c)
		rows += c.rows
	}
	inst.outstanding++
	b.obs.BatchSize(take)
	b.batches.Add(1)
	b.dispatched.Add(int64(take))
	// A first attempt may give up early (attemptTimeout) only when another instance could take
	// the retry; on a model's only usable instance the one attempt runs to the deadline.
	other := slices.ContainsFunc(b.insts, func(x *backendInst) bool { return x != inst && x.usable(now) })
	f := &flight{inst: inst, calls: calls, rows: rows, expect: b.est.cost().Of(rows), dispatched: now, canRetry: other}
	for _, c := range calls {
		c.tries++
		f.canRetry = f.canRetry && c.tries < maxTries
	}
	inst.flights = append(inst.flights, f)
	b.flights.Add(1)
	if lead := calls[0]; lead.state.CompareAndSwap(callWaiting, callLeading) {
		lead.lead <- f // never blocks: one batch per call, buffer 1
	} else {
		go b.send(f)
	}
	return true
}

// send runs on the goroutine of the batch's first request (or its own, when that client has
// gone): it calls the backend, answers every request of the batch and reports the completion
// to the batcher.
func (b *Batcher) send(f *flight) {
	defer b.flights.Done()
	n := len(f.calls)
	reqs := make([]*oip.InferenceRequest, n)
	for i, c := range f.calls {
		reqs[i] = c.req
	}
	limit := attemptTimeout(f.canRetry, f.expect, b.spec.Threshold, b.timeout, latestDeadline(f.calls), f.dispatched)
	ctx, cancel := context.WithTimeout(telemetry.CarryTrace(b.ctx, f.calls[0].ctx), limit) // the first request's trace continues at the worker
	ctx, delay := withStartDelay(ctx)
	resps, err := b.backend.Infer(ctx, f.inst.Addr, b.name, reqs)
	f.startDelay = time.Duration(delay.Load())
	hung := err != nil && ctx.Err() == context.DeadlineExceeded && b.ctx.Err() == nil
	cancel()
	f.completed = time.Now()
	if err == nil && len(resps) != n {
		err = &BadGatewayError{Msg: fmt.Sprintf("%d answers for a batch of %d", len(resps), n)}
	}
	if hung {
		// A hung or very slow instance: retried like an unreachable one, or answered 504. It
		// is benched only when it also fails a health check (a slow batch is not a hung worker).
		f.alive = b.alive(f.inst.Addr)
		err = fmt.Errorf("%w (instance %s, %v)", ErrBatchTimeout, f.inst.ID, limit)
		if f.canRetry {
			f.retry, f.failed, f.err = true, true, err
			b.completions <- f
			return
		}
		f.hung = true
	}
	if err != nil && !hung && busyAnswer(err) && b.ctx.Err() == nil {
		// The instance refused the batch before running it (its own in-flight limit, shared
		// with other gateway replicas): the batcher bounces it (busy.go).
		f.busy, f.failed = true, true
		b.completions <- f
		return
	}
	if err != nil && f.canRetry && (unreachable(err) || goneAnswer(err)) && b.ctx.Err() == nil {
		// Nothing was computed: the batcher sends the batch to another instance if it has one,
		// or fails it (complete).
		f.retry, f.failed, f.err = true, true, backendError(err, n)
		b.completions <- f
		return
	}
	if err != nil && n > 1 && clientError(err) && b.ctx.Err() == nil {
		// The instance refused the merged batch: one request may be at fault. Each is sent
		// alone, so that only the offender gets the error.
		f.failed = true
		b.sendEach(f, limit)
		b.completions <- f
		return
	}
	if err != nil && !hung {
		err = backendError(err, n)
	}
	f.failed = err != nil
	for i, c := range f.calls {
		if err != nil {
			c.done <- result{err: err}
			continue
		}
		c.done <- result{resp: annotate(resps[i], n)}
	}
	b.completions <- f
}

// sendEach answers each request of f with its own batch of one, concurrently, on the same
// instance, each bounded by limit.
func (b *Batcher) sendEach(f *flight, limit time.Duration) {
	var wg sync.WaitGroup
	for _, c := range f.calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(telemetry.CarryTrace(b.ctx, c.ctx), limit)
			defer cancel()
			resps, err := b.backend.Infer(ctx, f.inst.Addr, b.name, []*oip.InferenceRequest{c.req})
			switch {
			case err != nil:
				c.done <- result{err: backendError(err, 1)}
			case len(resps) != 1:
				c.done <- result{err: &BadGatewayError{Msg: fmt.Sprintf("%d answers for a batch of 1", len(resps))}}
			default:
				c.done <- result{resp: annotate(resps[0], 1)}
			}
		})
	}
	wg.Wait()
}

// clientError reports whether err is an instance's 4xx answer other than 429 (overloaded): the
// batch's content was refused.
func clientError(err error) bool {
	var se *oip.StatusError
	return errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && se.Code != http.StatusTooManyRequests
}

// healthTimeout bounds the health check of an instance that did not answer a batch in time.
const healthTimeout = 250 * time.Millisecond

// alive reports whether the instance at addr answers a health check within healthTimeout; a
// backend that cannot check (no Checker) reports false, which benches the instance as before.
func (b *Batcher) alive(addr string) bool {
	hc, ok := b.backend.(Checker)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(b.ctx, healthTimeout)
	defer cancel()
	return hc.Ready(ctx, addr) == nil
}

// ParamBatchSize is the response parameter in which the gateway reports how many requests were
// served in the same batch as this one.
const ParamBatchSize = "sloserve_batch_size"

// annotate sets a response's batch size parameter and turns the batch's service time into the
// request's share of it (batch time / batch size), so that the Sloserve-Service-Time-Us headers
// of all responses sum to the workers' busy time.
func annotate(r *oip.InferenceResponse, n int) *oip.InferenceResponse {
	p := make(oip.Parameters, len(r.Parameters)+1)
	for k, v := range r.Parameters {
		p[k] = v
	}
	p[ParamBatchSize] = n
	r.Parameters = p
	r.ServiceTime /= time.Duration(n)
	return r
}

// complete records a finished batch: frees the slot, finishes a drain, tells the policy.
func (b *Batcher) complete(f *flight) {
	b.observeFlight(f)
	f.inst.outstanding--
	if i := slices.Index(f.inst.flights, f); i >= 0 {
		f.inst.flights = slices.Delete(f.inst.flights, i, i+1)
	}
	switch {
	case !f.failed:
		f.inst.busyStreak = 0
		b.est.observe(f.rows, f.completed.Sub(f.dispatched)-f.startDelay) // the batch's own time (startdelay.go)
		b.obs.Executed(f.rows, f.completed.Sub(f.dispatched), func(yield func(time.Duration) bool) {
			for _, c := range f.calls {
				if !yield(f.dispatched.Sub(c.arrival)) {
					return
				}
			}
		})
		b.est.lastDone.Store(f.completed.UnixNano())
	case f.hung || (f.retry && errors.Is(f.err, ErrBatchTimeout)):
		// Timed out: its round trip is at least the attempt's time. Leaving it out would keep
		// only the batches lucky enough to finish, and the estimate optimistic exactly when
		// the instance is slow.
		b.est.observe(f.rows, f.completed.Sub(f.dispatched))
	}
	if f.hung && !f.alive {
		f.inst.downUntil = time.Now().Add(DownFor) // its last attempt timed out: a hung instance
	}
	if f.inst.draining && f.inst.outstanding == 0 {
		b.removeInstance(f.inst)
	}
	if f.busy {
		b.bounce(f, time.Now()) // no batch ran: nothing for the estimate or the policy
		return
	}
	if f.retry {
		now := time.Now()
		if !f.alive {
			f.inst.downUntil = now.Add(DownFor)
		}
		other := false
		for _, in := range b.insts {
			other = other || in.usable(now)
		}
		if other {
			b.log.Warn("instance unreachable; its batch goes to another", "model", b.name, "instance", f.inst.ID, "requests", len(f.calls))
			for _, c := range f.calls {
				c.state.Store(callWaiting)
			}
			b.q = append(f.calls, b.q...)
			for _, c := range f.calls {
				b.enter(c)
			}
		} else {
			for _, c := range f.calls {
				c.done <- result{err: f.err}
			}
		}
	}
	b.arrivals = b.arrivals[:0]
	for _, c := range f.calls {
		b.arrivals = append(b.arrivals, c.arrival)
		if !f.retry {
			b.est.outcome(f.completed.After(c.deadline) || f.hung || b.est.beyondMargin(c, f.completed), f.completed)
		}
	}
	b.policy.Observe(batching.Outcome{Size: len(f.calls), Dispatched: f.dispatched, Completed: f.completed,
		Arrivals: b.arrivals, Failed: f.failed}, time.Now())
}

func (b *Batcher) addInstance(in Instance) error {
	for _, x := range b.insts {
		if x.ID == in.ID {
			return fmt.Errorf("add instance %s to %s: already present", in.ID, b.name)
		}
	}
	b.insts = append(b.insts, &backendInst{Instance: in, weight: 1})
	b.countInstances()
	return nil
}

// setWeights sets the dispatch weight of each listed instance the batcher has; w is valid.
func (b *Batcher) setWeights(w map[string]float64) {
	for _, x := range b.insts {
		if v, ok := w[x.ID]; ok {
			x.weight = v
		}
	}
}

// drainInstance marks an instance draining and returns a channel closed once it has no batch
// in flight.
func (b *Batcher) drainInstance(id string) (chan struct{}, error) {
	for _, x := range b.insts {
		if x.ID != id {
			continue
		}
		if x.drained == nil {
			x.drained = make(chan struct{})
		}
		if !x.draining {
			x.draining = true
			if x.outstanding == 0 {
				b.removeInstance(x)
			}
		}
		b.countInstances()
		return x.drained, nil
	}
	return nil, fmt.Errorf("remove instance %s from %s: %w", id, b.name, errUnknownInstance)
}

var errUnknownInstance = errors.New("unknown instance")

func (b *Batcher) removeInstance(x *backendInst) {
	for i, y := range b.insts {
		if y == x {
			b.insts = append(b.insts[:i], b.insts[i+1:]...)
			break
		}
	}
	close(x.drained)
	b.countInstances()
}

func (b *Batcher) countInstances() {
	ready, draining := 0, 0
	for _, x := range b.insts {
		if x.draining {
			draining++
		} else {
			ready++
		}
	}
	b.obs.InstanceCounts(ready, draining)
}

// Stop ends the batcher: waiting requests fail with ErrShuttingDown; batches in flight finish
// unless ctx ends first, which cancels them. It returns the number of failed waiting requests.
func (b *Batcher) Stop(ctx context.Context) int {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.exited
		return 0
	}
	b.closed = true
	b.mu.Unlock()
	close(b.quit)
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			b.cancel()
		case <-done:
		}
	}()
	<-b.exited
	close(done)
	b.cancel()
	return b.failed
}

// shutdown runs on the batcher goroutine once closed is set: no call can enter `in` any more.
func (b *Batcher) shutdown() {
	b.timer.Stop()
	for more := true; more; {
		select {
		case c := <-b.in:
			b.q = append(b.q, c)
		default:
			more = false
		}
	}
	for _, c := range b.q {
		c.done <- result{err: ErrShuttingDown}
		b.failed++
		b.leave(c)
	}
	clear(b.q)
	b.q = b.q[:0]
	b.obs.QueueLength(0)
	// Let batches in flight finish; their completions are consumed here so send never blocks.
	go func() { b.flights.Wait(); close(b.completions) }()
	for f := range b.completions {
		if f.busy || f.retry { // sent back by send, answered by nobody yet
			for _, c := range f.calls {
				c.done <- result{err: ErrShuttingDown}
				b.failed++
			}
		}
	}
}

// unreachable reports whether err means the instance could not be reached or dropped the
// connection (a crashed worker) rather than answering.
func unreachable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false // the instance may have computed the batch; do not send it twice
	}
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
