package batcher

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/oip"
)

// Overload protection has two layers. The first, the bounded queue (Model.QueueLimit), refuses a
// request with 429 when the model's queue is full. The second, admission by deadline, refuses at
// arrival (429 + Retry-After) a request that the model's instances cannot serve before its
// deadline given the work already queued ahead of it, instead of admitting it only for it to
// time out (504) after occupying the queue — MArk's "Bouncer" (§4.4) applied to the VM tier: a
// request that cannot make its deadline is turned away at the door, so the requests that are
// admitted keep meeting theirs.
//
// Admission must not lock itself out: its estimate only improves when a batch completes, and a
// batch completes only when something is admitted. So the estimate is per row (one large
// request does not make every small batch look slow), an empty queue with a free slot always
// admits, and once per probeEvery a request is let through as a probe when no batch has
// completed for that long.

// ErrCannotMeetDeadline means the model's queue holds more work than its instances can finish
// before the request's deadline; it is refused at arrival (429, Retry-After).
var ErrCannotMeetDeadline = fmt.Errorf("gateway: the queue ahead cannot be served before the deadline: %w", oip.ErrOverloaded)

// The estimator's arithmetic is internal/admission's (Admit, Estimator): the one admission
// estimator, which the simulator applies to every simulated request too. The batcher keeps it
// behind atomics (estimator) so that arriving requests read it while the batcher writes it.

// BatchCost is admission.BatchCost.
type BatchCost = admission.BatchCost

// probeEvery is how often admission lets a refused request through as a probe when no batch has
// completed for that long: a stale estimate is refreshed by the probe's own batch.
const probeEvery = time.Second

// estimator holds a model's running estimates for admission and for per-batch timeouts. It is
// written by the batcher goroutine and read by the goroutines of arriving requests.
type estimator struct {
	fixed    atomic.Int64  // BatchCost.Fixed, ns; 0 with perRow 0 until the first batch
	perRow   atomic.Uint64 // BatchCost.PerRowNS as float64 bits
	maxBatch atomic.Int64  // the policy's MaxBatch after the last decision
	slots    atomic.Int64  // slots of usable instances after the last step
	busy     atomic.Int64  // batches in flight on usable instances after the last step
	busyLeft atomic.Int64  // their summed estimated remaining time at busyAt, ns
	busyAt   atomic.Int64  // when busyLeft was computed, unix ns
	rows     atomic.Int64  // rows of the requests waiting (in `in` and in the queue)
	lastDone atomic.Int64  // when the last batch completed (or the model started), unix ns
	probeAt  atomic.Int64  // when the last probe was let through, unix ns
	margin   atomic.Uint64 // the miss controller's margin fraction as float64 bits; 0 before any
	batches  atomic.Int64  // successful batches observed (the cost fit's points)

	est admission.Estimator // the cost fits and the miss controller; owned by the batcher goroutine
}

// outcome records an admitted request's outcome at now: missed its deadline or not. Only the
// batcher goroutine calls it.
func (e *estimator) outcome(missed bool, now time.Time) {
	e.margin.Store(math.Float64bits(e.est.Outcome(missed, now)))
}

// beyondMargin reports whether c, answered at completed, overran admission's estimate of its
// answer by more than the current margin (admission.Estimator.BeyondMargin). Only the batcher
// goroutine calls it.
func (e *estimator) beyondMargin(c *call, completed time.Time) bool {
	return e.est.BeyondMargin(c.expect, c.arrival, c.deadline, completed)
}

// marginFrac is the current margin fraction.
func (e *estimator) marginFrac() float64 {
	if v := math.Float64frombits(e.margin.Load()); v > 0 {
		return v
	}
	return admission.MarginStart
}

// cost is the current batch cost estimate.
func (e *estimator) cost() BatchCost {
	return BatchCost{Fixed: time.Duration(e.fixed.Load()), PerRowNS: math.Float64frombits(e.perRow.Load())}
}

// observe records one successful batch round trip of rows rows; only the batcher goroutine calls
// it.
func (e *estimator) observe(rows int64, rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	e.est.Observe(rows, rtt)
	e.batches.Add(1)
	c := e.est.Cost()
	e.fixed.Store(int64(c.Fixed))
	e.perRow.Store(math.Float64bits(c.PerRowNS))
}

// facts are the admission facts for a request of rows rows arriving at now with queued
// requests waiting (itself included).
func (e *estimator) facts(queued int, rows int64, budget time.Duration, now time.Time) admission.Facts {
	busy := int(e.busy.Load())
	left := time.Duration(e.busyLeft.Load())
	if at := e.busyAt.Load(); at > 0 && busy > 0 {
		// The batches in flight have run since the batcher last summed them.
		left = max(left-time.Duration(busy)*max(now.Sub(time.Unix(0, at)), 0), 0)
	}
	return admission.Facts{Queued: queued, QueuedRows: e.rows.Load(), Rows: rows, MaxBatch: int(e.maxBatch.Load()),
		Slots: int(e.slots.Load()), Busy: busy, BusyLeft: left, Cost: e.cost(), Budget: budget, Margin: e.marginFrac()}
}

// probe reports whether a refused request arriving at now may go through as a probe: no batch
// has completed and no probe was let through for probeEvery. At most one caller wins per
// interval.
func (e *estimator) probe(now time.Time) bool {
	n := now.UnixNano()
	if n-e.lastDone.Load() < int64(probeEvery) {
		return false
	}
	p := e.probeAt.Load()
	return n-p >= int64(probeEvery) && e.probeAt.CompareAndSwap(p, n)
}
