package gateway

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

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

// BatchCost is the estimated round trip of one batch to an instance as a function of its rows:
// Fixed + PerRow·rows. The zero value means unknown (no batch has completed yet).
type BatchCost struct {
	// Fixed is the per-batch part (HTTP round trip, framing, the runtime's call overhead).
	Fixed time.Duration
	// PerRowNS is the per-row part, in nanoseconds per row.
	PerRowNS float64
}

// Known reports whether the cost has been measured.
func (c BatchCost) Known() bool { return c.Fixed > 0 || c.PerRowNS > 0 }

// Of is the estimated round trip of a batch of rows rows (at least one).
func (c BatchCost) Of(rows int64) time.Duration {
	v := float64(c.Fixed) + c.PerRowNS*float64(max(rows, 1))
	return time.Duration(min(v, math.MaxInt64/4))
}

// AdmissionFacts are what admission by deadline knows about a model when a request arrives.
type AdmissionFacts struct {
	// Queued is the number of requests waiting for dispatch, this one included.
	Queued int
	// QueuedRows is the number of rows those requests carry, this one's included; ≤ 0 means one
	// row per request.
	QueuedRows int64
	// Rows is this request's rows; < 1 means 1.
	Rows int64
	// MaxBatch is the largest batch the model's policy dispatches now (requests); < 1 means 1.
	MaxBatch int
	// Slots is the number of batches the model's usable instances take at once; 0 means no
	// instance is usable now (the request is admitted: it waits for one until its deadline).
	Slots int
	// Busy is the number of batches in flight on those instances.
	Busy int
	// BusyLeft is the estimated time the batches in flight still need, summed over them.
	BusyLeft time.Duration
	// Cost is the estimated batch round trip; zero means unknown (no batch has completed yet):
	// the queue then admits at most coldRounds rounds of work.
	Cost BatchCost
	// Budget is the request's whole time budget (deadline − arrival); the margin an admitted
	// request must leave before its deadline is Margin of it.
	Budget time.Duration
	// Margin is the fraction of Budget the estimated answer must leave before the deadline, in
	// [0, 1); the model's miss controller keeps it (missControl).
	Margin float64
}

// Admission is the answer of Admit.
type Admission struct {
	// Admit reports whether the request joins the queue.
	Admit bool
	// Done is the estimate of when the request would be answered (zero when unknown).
	Done time.Time
	// RetryAfter is the hint for a refused request: the time the queue ahead needs to drain.
	RetryAfter time.Duration
	// Reason says why, as a constant string.
	Reason string
}

// Admit decides whether a request arriving at now with the given deadline is admitted. The work
// ahead of it — what the batches in flight still need, plus the queued requests in full batches
// of MaxBatch — is spread over the Slots, and then its own batch runs:
//
//	k = ⌈Queued / MaxBatch⌉ batches, r = rows per batch (MaxBatch requests of the queue's mean
//	rows, at least this request's), t(r) = Cost.Fixed + Cost.PerRow·r,
//	Done = now + (BusyLeft + (k − 1)·t(r)) / Slots + t(r),
//	admit ⇔ Done + max(t(r), Margin · Budget) ≤ deadline.
//
// The margin covers what the estimate leaves out — the policy's batching wait, timer and
// scheduling delays of a loaded machine, the variance of the batch times — and scales with the
// SLO; its fraction is set by feedback on the admitted requests that still missed their deadline
// (missControl), so that they stay rare at heavy overload, not only on average. An empty queue
// with a free slot always admits: the request can start at once, and its completion is what
// refreshes the estimate.
//
// Admit is pure: it reads no clock.
func Admit(f AdmissionFacts, deadline, now time.Time) Admission {
	if f.Slots <= 0 || f.Queued <= 0 {
		return Admission{Admit: true, Reason: "no instance usable: wait for one"}
	}
	if f.Queued == 1 && f.Busy < f.Slots {
		return Admission{Admit: true, Reason: "empty queue and a free slot"}
	}
	mb := max(f.MaxBatch, 1)
	if !f.Cost.Known() {
		per := mb * f.Slots
		if (f.Queued+per-1)/per > coldRounds { // the queue alone; the batches in flight have no known end yet
			return Admission{RetryAfter: time.Second, Reason: "no estimate: queue beyond the cold bound"}
		}
		return Admission{Admit: true, Reason: "no estimate"}
	}
	rowsPer := 1.0
	if f.QueuedRows > 0 {
		rowsPer = float64(f.QueuedRows) / float64(f.Queued)
	}
	batch := int64(math.Ceil(rowsPer * float64(min(mb, f.Queued))))
	batch = max(batch, f.Rows, 1)
	t := float64(f.Cost.Of(batch))
	k := float64((f.Queued + mb - 1) / mb)
	wait := (float64(max(f.BusyLeft, 0))+(k-1)*t)/float64(f.Slots) + t
	wait = min(wait, math.MaxInt64/4)
	done := now.Add(time.Duration(wait))
	margin := max(time.Duration(t), time.Duration(min(max(f.Margin, 0), 1)*float64(max(f.Budget, 0))))
	if done.Add(margin).After(deadline) {
		return Admission{Done: done, RetryAfter: max(time.Duration(wait), time.Second), Reason: "deadline unreachable"}
	}
	return Admission{Admit: true, Done: done, Reason: "deadline reachable"}
}

// coldRounds bounds the queue (the batches in flight aside), in rounds of full batches on every
// slot, before the first batch has completed and its time is known: a burst at start-up would otherwise fill the queue with
// requests that time out (measured: 20 of 800 at 10× capacity in test/soak).
const coldRounds = 2

// The miss controller: the margin's fraction of the budget follows the admitted requests' deadline
// misses by stochastic approximation towards a target miss rate — each admitted request answered
// after its deadline (or 504) raises it by missGain·(1 − missTarget), each one in time lowers it
// by missGain·missTarget — so it settles where missTarget of the admitted requests miss, within
// [marginFloor, marginCap]. Between outcomes the fraction also relaxes towards the floor with
// time constant marginRelax, so that a burst of misses from a passing stall (a loaded machine's
// scheduler, another process's burst) does not keep admission strict for the thousands of
// requests the per-request steps alone would need. A fixed margin cannot do this: one batch time
// (≈ 2 ms for small batches) let 23–57 % of the admitted requests end in 504 at 5,000 rps offered
// to one worker, and a quarter of the SLO still 5 % at 1,000 rps on a machine shared with other
// work, whose stalls no queue estimate sees; a large fixed margin refuses requests that would have
// made it when the machine is quiet.
const (
	missTarget  = 0.0025           // the admitted requests' deadline-miss rate the margin aims at
	missGain    = 0.05             // step of the margin fraction per admitted request's outcome
	marginFloor = 0.05             // the least margin, as a fraction of the budget
	marginCap   = 0.75             // the most
	marginStart = 0.25             // before any outcome
	marginRelax = 60 * time.Second // time constant of the relaxation towards the floor
)

// missControl is the margin fraction's controller; owned by the batcher goroutine.
type missControl struct {
	frac float64
	at   time.Time // the last outcome
}

// outcome records at now whether an admitted request missed its deadline and returns the new
// fraction.
func (m *missControl) outcome(missed bool, now time.Time) float64 {
	if m.frac == 0 {
		m.frac = marginStart
	}
	if !m.at.IsZero() && now.After(m.at) {
		m.frac = marginFloor + (m.frac-marginFloor)*math.Exp(-float64(now.Sub(m.at))/float64(marginRelax))
	}
	m.at = now
	if missed {
		m.frac += missGain * (1 - missTarget)
	} else {
		m.frac -= missGain * missTarget
	}
	m.frac = min(max(m.frac, marginFloor), marginCap)
	return m.frac
}

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

	fit  [2]costFit  // fast and slow memory (fitDecay); owned by the batcher goroutine
	miss missControl // owned by the batcher goroutine
}

// outcome records an admitted request's outcome at now: missed its deadline or not. Only the
// batcher goroutine calls it.
func (e *estimator) outcome(missed bool, now time.Time) {
	e.margin.Store(math.Float64bits(e.miss.outcome(missed, now)))
}

// beyondMargin reports whether c, answered at completed, overran admission's estimate of its
// answer by more than the current margin — whether it would have missed its deadline had it been
// admitted at the boundary. Every answered request thus tells the miss controller something, not
// only the few admitted close to their deadline.
func (e *estimator) beyondMargin(c *call, completed time.Time) bool {
	if c.expect.IsZero() || e.batches.Load() < overrunWarmup {
		return false
	}
	return float64(completed.Sub(c.expect)) > e.marginFrac()*float64(c.deadline.Sub(c.arrival))
}

// overrunWarmup is how many batches the cost fit must have seen before overruns count against
// the margin: the first batches of a model (cold workers, a fit of a few points) overrun their
// estimates by design, and counting them drove the margin to its cap at every start — refusing
// 13 % of a burst the old margin served (TestStartINFlessPlacesOnServers under load). Deadline
// misses count from the first request.
const overrunWarmup = 50

// marginFrac is the current margin fraction.
func (e *estimator) marginFrac() float64 {
	if v := math.Float64frombits(e.margin.Load()); v > 0 {
		return v
	}
	return marginStart
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
	for i := range e.fit {
		e.fit[i].add(float64(max(rows, 1)), float64(rtt), fitDecay[i])
	}
	e.batches.Add(1)
	fast, slow := e.fit[0].cost(), e.fit[1].cost()
	c := BatchCost{Fixed: max(fast.Fixed, slow.Fixed), PerRowNS: max(fast.PerRowNS, slow.PerRowNS)}
	e.fixed.Store(int64(c.Fixed))
	e.perRow.Store(math.Float64bits(c.PerRowNS))
}

// facts are the admission facts for a request of rows rows arriving at now with queued
// requests waiting (itself included).
func (e *estimator) facts(queued int, rows int64, budget time.Duration, now time.Time) AdmissionFacts {
	busy := int(e.busy.Load())
	left := time.Duration(e.busyLeft.Load())
	if at := e.busyAt.Load(); at > 0 && busy > 0 {
		// The batches in flight have run since the batcher last summed them.
		left = max(left-time.Duration(busy)*max(now.Sub(time.Unix(0, at)), 0), 0)
	}
	return AdmissionFacts{Queued: queued, QueuedRows: e.rows.Load(), Rows: rows, MaxBatch: int(e.maxBatch.Load()),
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

// costFit fits a batch's round trip as a + b·rows by exponentially weighted least squares over
// the recent successful batches (weight decay per newer batch): one large request moves the
// per-row slope, not the time of every small batch, and old batches fade.
type costFit struct{ w, sx, sy, sxx, sxy float64 }

// fitDecay is the weight a batch's observation keeps per newer batch in the estimator's two fits,
// whose larger fixed and per-row costs admission uses: the fast one (~10 batches of memory)
// follows a slow-down within ~10 batches; the slow one (~100) keeps a worker whose batch times
// swing — a run of quick batches between stalls — from being taken for fast by the last ten of
// them. With the fast fit alone, the estimate of a worker stopped 95 % of every 20 ms swung
// between 4 and 8 ms per batch of one, and the queue it admitted on the low swing missed its
// deadlines together (1.0–1.6 % of the admitted requests in 504, test/attack).
var fitDecay = [2]float64{0.9, 0.99}

func (f *costFit) add(x, y, decay float64) {
	f.w = decay*f.w + 1
	f.sx = decay*f.sx + x
	f.sy = decay*f.sy + y
	f.sxx = decay*f.sxx + x*x
	f.sxy = decay*f.sxy + x*y
}

// cost returns the fitted cost. While the batches seen all had about the same rows (the spread
// of rows is under a tenth of their mean), the slope cannot be told from the intercept: the mean
// time is split half fixed, half per row — exact at the rows seen, and growing with rows beyond
// them, so a request far larger than any seen is expected to be slow rather than fast.
func (f *costFit) cost() BatchCost {
	if f.w <= 0 {
		return BatchCost{}
	}
	mx, my := f.sx/f.w, f.sy/f.w
	vx := f.sxx/f.w - mx*mx
	if vx <= 0.01*mx*mx {
		return BatchCost{Fixed: time.Duration(my / 2), PerRowNS: my / 2 / mx}
	}
	b := (f.sxy/f.w - mx*my) / vx
	a := my - b*mx
	switch {
	case b < 0:
		a, b = my, 0
	case a < 0:
		a, b = 0, my/mx
	}
	return BatchCost{Fixed: time.Duration(a), PerRowNS: b}
}
