package batching

import (
	"time"

	"github.com/sloserve/sloserve/internal/profile"
)

// Fixed is MArk's batch manager (MArk §4.3, Fig. 5): it dispatches when N_batch requests wait or
// when the oldest has waited W_batch, whichever comes first. As a guard that MArk does not need
// (its deadlines are all arrival + RT_max and W_batch < RT_max) it also dispatches once a waiting
// request reaches its own deadline, so that requests with shorter deadlines are never held past them.
type Fixed struct {
	n int
	w time.Duration
}

var _ Policy = (*Fixed)(nil)

// NewFixed returns the fixed policy with maximum batch size n (≥ 1; smaller values mean 1) and
// batching window w (≥ 0).
func NewFixed(n int, w time.Duration) *Fixed {
	if n < 1 {
		n = 1
	}
	if w < 0 {
		w = 0
	}
	return &Fixed{n: n, w: w}
}

// Decide dispatches min(Len, N) requests when Len ≥ N, now ≥ Oldest+W or now ≥ EarliestDeadline;
// otherwise it waits until the earlier of Oldest+W and EarliestDeadline. When requests remain
// after a dispatch, Next is now so that the runtime asks again at once.
func (f *Fixed) Decide(q Queue, now time.Time) Decision {
	if q.Len <= 0 {
		return Decision{Reason: ReasonEmpty}
	}
	due := q.Oldest.Add(f.w)
	var d Decision
	switch {
	case q.Len >= f.n:
		d = Decision{Dispatch: f.n, Reason: ReasonFull}
	case !now.Before(due):
		d = Decision{Dispatch: q.Len, Reason: ReasonWindow}
	case !q.EarliestDeadline.IsZero() && !now.Before(q.EarliestDeadline):
		d = Decision{Dispatch: q.Len, Reason: ReasonDeadline}
	default:
		if !q.EarliestDeadline.IsZero() && q.EarliestDeadline.Before(due) {
			due = q.EarliestDeadline
		}
		return Decision{Next: due, Reason: ReasonWait}
	}
	if q.Len > d.Dispatch {
		d.Next = now
	}
	return d
}

// DecideOffsets is Decide on nanosecond offsets from a common origin, for a caller that keeps
// its clock as offsets (the simulator's event loop, where the conversions to times were a tenth
// of the scoreboard's CPU, issue #17): the queue's length, its oldest arrival, its earliest
// deadline (always set) and now. It returns Decide's Dispatch and its Next as an offset (-1 for
// none): exactly Decide's answer on the times origin + offset.
func (f *Fixed) DecideOffsets(n int, oldest, deadline, now int64) (dispatch int, next int64) {
	if n <= 0 {
		return 0, -1
	}
	due := oldest + int64(f.w)
	switch {
	case n >= f.n:
		dispatch = f.n
	case now >= due, now >= deadline:
		dispatch = n
	default:
		return 0, min(due, deadline)
	}
	if n > dispatch {
		return dispatch, now
	}
	return dispatch, -1
}

// Observe does nothing: fixed does not adapt (TuneFixed sets its parameters offline).
func (f *Fixed) Observe(Outcome, time.Time) {}

// MaxBatch returns N_batch.
func (f *Fixed) MaxBatch() int { return f.n }

// MaxWait returns W_batch.
func (f *Fixed) MaxWait() time.Duration { return f.w }

// TuneFixed applies MArk's batching rule (MArk §4.3) to one instance type's service-time curve:
// starting from b = 1 it increases the batch size while both
//
//	W_batch + T_b ≤ RT_max          (no SLO violation)
//	W_batch + T_b ≤ b / μ*_nb       (batching beats serving the b requests one by one)
//
// hold for some W_batch ≥ 0, where T_b = curve.ServiceTime(b) and μ*_nb = 1/T_1 is the processing
// rate without batching. It stops at the first b that violates them (as the paper does) or at
// maxBatch, and returns N_batch = the last feasible b, the largest window that size allows,
// W_batch = min(RT_max, b/μ*_nb) − T_b, and the resulting maximum processing rate
// μ* = N_batch / T_{N_batch} in requests per second (a saturated instance serves full batches
// back to back; the planner treats the instance as a black box with rate μ*).
//
// maxBatch ≤ 0 means the curve's largest measured batch: the rule then never trusts the curve's
// extrapolation. n == 0 (with w == 0 and rate == 0) means the instance type cannot meet RT_max
// even without batching (T_1 > RT_max).
func TuneFixed(curve profile.Curve, rtMax time.Duration, maxBatch int) (n int, w time.Duration, rate float64) {
	return TuneFixedSlots(curve, rtMax, maxBatch, 1)
}

// TuneFixedSlots is TuneFixed for an instance that serves slots batches concurrently: without
// batching it serves slots requests per T_1, so μ*_nb = slots/T_1 and the second bound is
// W_batch + T_b ≤ b·T_1/slots — waiting longer to fill a batch than the instance takes to serve
// its requests one by one on all its slots does not pay. The returned rate is per slot
// (N_batch / T_{N_batch}); the instance's is slots times it. slots ≤ 1 is TuneFixed.
func TuneFixedSlots(curve profile.Curve, rtMax time.Duration, maxBatch, slots int) (n int, w time.Duration, rate float64) {
	slots = max(slots, 1)
	if maxBatch <= 0 {
		maxBatch = curve.MaxMeasured()
	}
	t1 := curve.ServiceTime(1)
	if t1 <= 0 {
		return 0, 0, 0
	}
	for b := 1; b <= maxBatch; b++ {
		tb := curve.ServiceTime(b)
		bound := time.Duration(b) * t1 / time.Duration(slots) // b / μ*_nb
		if b == 1 {
			bound = t1 // no batching: no window, T_1 ≤ RT_max alone
		}
		if rtMax < bound {
			bound = rtMax
		}
		if tb > bound {
			break
		}
		n, w = b, bound-tb
	}
	if n == 0 {
		return 0, 0, 0
	}
	return n, w, float64(n) / curve.ServiceTime(n).Seconds()
}
