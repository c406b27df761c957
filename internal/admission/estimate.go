package admission

import (
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/timex"
)

// The one admission estimator: the live gateway refuses with it (429 + Retry-After) and the
// simulator routes with it (policy.TierView.Admission), so simulated attainment is measured
// under the rule the live system applies. Whether a refused request is turned away or spilled
// to a serverless tier is the policy's decision (a policy.Router), not the estimator's.
//
// It is MArk's Bouncer (§4.1: "checks whether its own host instance can finish the inference
// within the specified time RT_max") with the estimate learned rather than read from a profile:
// the batch cost is fitted to the batches the runtime has seen complete (no oracle of the
// service time), and the margin an admitted request must leave before its deadline follows the
// admitted requests' misses (MissControl). The profile-driven Bouncer estimators it replaces
// read the simulator's own service times (issue #15).

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

// Facts are what admission by deadline knows about a model when a request arrives.
type Facts struct {
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
	// the queue then admits at most ColdRounds rounds of work.
	Cost BatchCost
	// Budget is the request's whole time budget (deadline − arrival); the margin an admitted
	// request must leave before its deadline is Margin of it.
	Budget time.Duration
	// Margin is the fraction of Budget the estimated answer must leave before the deadline, in
	// [0, 1); MissControl keeps it.
	Margin float64
}

// Verdict is the answer of Admit.
type Verdict struct {
	// Admit reports whether the request joins the queue.
	Admit bool
	// Done is the estimate of when the request would be answered (zero when unknown).
	Done time.Time
	// RetryAfter is the hint for a refused request: the time the queue ahead needs to drain.
	RetryAfter time.Duration
	// Reason says why, as a constant string.
	Reason string
}

// The reasons of a Verdict.
const (
	ReasonNoInstance  = "no instance usable: wait for one"
	ReasonFreeSlot    = "empty queue and a free slot"
	ReasonColdBound   = "no estimate: queue beyond the cold bound"
	ReasonNoEstimate  = "no estimate"
	ReasonUnreachable = "deadline unreachable"
	ReasonReachable   = "deadline reachable"
)

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
// (MissControl), so that they stay rare at heavy overload, not only on average. An empty queue
// with a free slot always admits: the request can start at once, and its completion is what
// refreshes the estimate.
//
// Admit is pure: it reads no clock.
func Admit(f Facts, deadline, now time.Time) Verdict {
	if v, ok := Immediate(f.Queued, f.Busy, f.Slots); ok {
		return v
	}
	wait, margin, v, final := estimate(f)
	if final {
		return v
	}
	done := now.Add(wait)
	if done.Add(margin).After(deadline) {
		return Verdict{Done: done, RetryAfter: max(wait, time.Second), Reason: ReasonUnreachable}
	}
	return Verdict{Admit: true, Done: done, Reason: ReasonReachable}
}

// AdmitOffsets is Admit on nanosecond offsets from a common origin (deadline and now), for a
// caller that keeps its clock as offsets (the simulator, issue #17): Admit's Admit, and its
// Done as an offset (0 when Done is zero). Exactly Admit's answer on the times origin + offset.
func AdmitOffsets(f Facts, deadline, now int64) (admit bool, done int64) {
	if v, ok := Immediate(f.Queued, f.Busy, f.Slots); ok {
		return v.Admit, 0
	}
	admit, _, done = EstimateOffsets(f, deadline, now)
	return admit, done
}

// EstimateOffsets is Admit on offsets where Immediate does not answer (ImmediateReason's ok
// false): its Admit, its Reason and its Done as an offset (0 when Done is zero).
func EstimateOffsets(f Facts, deadline, now int64) (admit bool, reason string, done int64) {
	wait, margin, v, final := estimate(f)
	if final {
		return v.Admit, v.Reason, 0
	}
	done = now + int64(wait)
	if int64(margin) <= deadline-done { // done + margin ≤ deadline, without overflow
		return true, ReasonReachable, done
	}
	return false, ReasonUnreachable, done
}

// estimate is Admit past Immediate: the wait until the request is answered and the margin, or
// (final) the verdict that needs no times.
func estimate(f Facts) (wait, margin time.Duration, v Verdict, final bool) {
	mb := max(f.MaxBatch, 1)
	if !f.Cost.Known() {
		per := mb * f.Slots
		if (f.Queued+per-1)/per > ColdRounds { // the queue alone; the batches in flight have no known end yet
			return 0, 0, Verdict{RetryAfter: time.Second, Reason: ReasonColdBound}, true
		}
		return 0, 0, Verdict{Admit: true, Reason: ReasonNoEstimate}, true
	}
	rowsPer := 1.0
	if f.QueuedRows > 0 {
		rowsPer = float64(f.QueuedRows) / float64(f.Queued)
	}
	batch := int64(math.Ceil(rowsPer * float64(min(mb, f.Queued))))
	batch = max(batch, f.Rows, 1)
	t := float64(f.Cost.Of(batch))
	k := float64((f.Queued + mb - 1) / mb)
	w := (float64(max(f.BusyLeft, 0))+(k-1)*t)/float64(f.Slots) + t
	w = min(w, math.MaxInt64/4)
	margin = max(time.Duration(t), time.Duration(min(max(f.Margin, 0), 1)*float64(max(f.Budget, 0))))
	return time.Duration(w), margin, Verdict{}, false
}

// Immediate is Admit's verdict when it needs neither the estimate nor the times — no instance
// usable, or an empty queue with a free slot (Facts' Queued, Busy and Slots) — and ok false
// otherwise. A caller that builds the Facts and times only when they are needed (the
// simulator's arrivals, issue #17) asks it first; Admit asks it too, so both answer alike.
func Immediate(queued, busy, slots int) (v Verdict, ok bool) {
	if reason, ok := ImmediateReason(queued, busy, slots); ok {
		return Verdict{Admit: true, Reason: reason}, true
	}
	return Verdict{}, false
}

// ImmediateReason is Immediate's Reason (its verdict then always admits), without the Verdict.
func ImmediateReason(queued, busy, slots int) (reason string, ok bool) {
	switch {
	case !Immediately(queued, busy, slots):
		return "", false
	case slots <= 0 || queued <= 0:
		return ReasonNoInstance, true
	default:
		return ReasonFreeSlot, true
	}
}

// Immediately is Immediate's ok, without the Verdict (which then always admits): the
// simulator's router-less arrivals ask it, where a Verdict built and copied per arrival stalled
// on store forwarding (3 % of the scoreboard's CPU, issue #17).
func Immediately(queued, busy, slots int) bool {
	return slots <= 0 || queued <= 0 || queued == 1 && busy < slots
}

// ColdRounds bounds the queue (the batches in flight aside), in rounds of full batches on every
// slot, before the first batch has completed and its time is known: a burst at start-up would
// otherwise fill the queue with requests that time out (measured: 20 of 800 at 10× capacity in
// test/soak).
const ColdRounds = 2

// The miss controller: the margin's fraction of the budget follows the admitted requests' deadline
// misses by stochastic approximation towards a target miss rate — each admitted request answered
// after its deadline (or 504) raises it by MissGain·(1 − MissTarget), each one in time lowers it
// by MissGain·MissTarget — so it settles where MissTarget of the admitted requests miss, within
// [MarginFloor, MarginCap]. Between outcomes the fraction also relaxes towards the floor with
// time constant MarginRelax, so that a burst of misses from a passing stall (a loaded machine's
// scheduler, another process's burst) does not keep admission strict for the thousands of
// requests the per-request steps alone would need. A fixed margin cannot do this: one batch time
// (≈ 2 ms for small batches) let 23–57 % of the admitted requests end in 504 at 5,000 rps offered
// to one worker, and a quarter of the SLO still 5 % at 1,000 rps on a machine shared with other
// work, whose stalls no queue estimate sees; a large fixed margin refuses requests that would have
// made it when the machine is quiet.
const (
	MissTarget  = 0.0025           // the admitted requests' deadline-miss rate the margin aims at
	MissGain    = 0.05             // step of the margin fraction per admitted request's outcome
	MarginFloor = 0.05             // the least margin, as a fraction of the budget
	MarginCap   = 0.75             // the most
	MarginStart = 0.25             // before any outcome
	MarginRelax = 60 * time.Second // time constant of the relaxation towards the floor
)

// MissControl is the margin fraction's controller; the zero value starts at MarginStart.
type MissControl struct {
	frac float64
	at   int64 // the last outcome, once atSet: nanoseconds from base
	// Instants are kept as offsets from base: the first time Outcome was given, or the base
	// SetBase set for a caller that keeps its clock as offsets (OutcomeAt, the simulator). The
	// conversion (timex.Sub) keeps a live clock's monotonic differences.
	base         time.Time
	atSet, based bool
}

// SetBase sets the time OutcomeAt's offsets count from; it must come before any outcome.
func (m *MissControl) SetBase(base time.Time) {
	if !m.based {
		m.base, m.based = base, true
	}
}

// Outcome records at now whether an admitted request missed its deadline and returns the new
// fraction.
func (m *MissControl) Outcome(missed bool, now time.Time) float64 {
	m.SetBase(now)
	return m.OutcomeAt(missed, int64(timex.Sub(now, m.base)))
}

// OutcomeAt is Outcome at now, nanoseconds from the base (SetBase): a caller that keeps its
// clock as offsets skips converting a time per request (issue #17).
func (m *MissControl) OutcomeAt(missed bool, now int64) float64 {
	if m.frac == 0 {
		m.frac = MarginStart
	}
	// At the floor the relaxation leaves the fraction exactly where it is (0 × e^x = 0): the
	// exponential is skipped (it was 7.6 % of a busy trace's run, pprof, issue #17).
	if m.frac != MarginFloor && m.atSet && now > m.at {
		m.frac = MarginFloor + (m.frac-MarginFloor)*math.Exp(-float64(now-m.at)/float64(MarginRelax))
	}
	m.at, m.atSet = now, true
	if missed {
		m.frac += MissGain * (1 - MissTarget)
	} else {
		m.frac -= MissGain * MissTarget
	}
	// min(max(frac, MarginFloor), MarginCap) by comparisons: the same for every frac, NaN
	// included (it stays NaN), without the builtins' NaN and signed-zero handling per request.
	if m.frac < MarginFloor {
		m.frac = MarginFloor
	} else if m.frac > MarginCap {
		m.frac = MarginCap
	}
	return m.frac
}

// Frac is the current margin fraction (MarginStart before any outcome).
func (m *MissControl) Frac() float64 {
	if m.frac == 0 {
		return MarginStart
	}
	return m.frac
}

// OverrunWarmup is how many batches the cost fit must have seen before overruns count against
// the margin (Estimator.BeyondMargin): the first batches of a model (cold workers, a fit of a
// few points) overrun their estimates by design, and counting them drove the margin to its cap
// at every start — refusing 13 % of a burst the old margin served (TestStartINFlessPlacesOnServers
// under load). Deadline misses count from the first request.
const OverrunWarmup = 50

// Estimator is one model's running estimate: the batch cost fitted to the batches seen and the
// miss controller's margin. It is pure and owned by one goroutine (the gateway's batcher, the
// simulator's event loop).
type Estimator struct {
	fit     [2]CostFit
	miss    MissControl
	batches int64
	cost    BatchCost
}

// FitDecay is the weight a batch's observation keeps per newer batch in the estimator's two fits,
// whose larger fixed and per-row costs admission uses: the fast one (~10 batches of memory)
// follows a slow-down within ~10 batches; the slow one (~100) keeps a worker whose batch times
// swing — a run of quick batches between stalls — from being taken for fast by the last ten of
// them. With the fast fit alone, the estimate of a worker stopped 95 % of every 20 ms swung
// between 4 and 8 ms per batch of one, and the queue it admitted on the low swing missed its
// deadlines together (1.0–1.6 % of the admitted requests in 504, test/attack).
var FitDecay = [2]float64{0.9, 0.99}

// Observe records one successful batch round trip of rows rows.
func (e *Estimator) Observe(rows int64, rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	for i := range e.fit {
		e.fit[i].Add(float64(max(rows, 1)), float64(rtt), FitDecay[i])
	}
	e.batches++
	fast, slow := e.fit[0].Cost(), e.fit[1].Cost()
	e.cost = BatchCost{Fixed: max(fast.Fixed, slow.Fixed), PerRowNS: max(fast.PerRowNS, slow.PerRowNS)}
}

// Cost is the current batch cost estimate.
func (e *Estimator) Cost() BatchCost { return e.cost }

// Batches is the number of batches observed.
func (e *Estimator) Batches() int64 { return e.batches }

// Outcome records an admitted request's outcome at now (missed its deadline or not) and returns
// the new margin fraction.
func (e *Estimator) Outcome(missed bool, now time.Time) float64 { return e.miss.Outcome(missed, now) }

// SetBase sets the time OutcomeAt's offsets count from (MissControl.SetBase).
func (e *Estimator) SetBase(base time.Time) { e.miss.SetBase(base) }

// OutcomeAt is Outcome at now, nanoseconds from the base (MissControl.OutcomeAt).
func (e *Estimator) OutcomeAt(missed bool, now int64) float64 { return e.miss.OutcomeAt(missed, now) }

// Margin is the current margin fraction.
func (e *Estimator) Margin() float64 { return e.miss.Frac() }

// BeyondMargin reports whether a request admitted with the estimate expect (Verdict.Done),
// arrived at arrival with deadline, and answered at completed overran the estimate by more than
// the current margin — whether it would have missed its deadline had it been admitted at the
// boundary. Every answered request thus tells the miss controller something, not only the few
// admitted close to their deadline. Overruns count only after OverrunWarmup batches.
func (e *Estimator) BeyondMargin(expect, arrival, deadline, completed time.Time) bool {
	if expect.IsZero() {
		return false
	}
	return e.OverrunBeyondMargin(completed.Sub(expect), deadline.Sub(arrival))
}

// OverrunBeyondMargin is BeyondMargin of a request given its overrun (answer − estimate) and
// its budget (deadline − arrival): the simulator keeps times as offsets and skips converting them.
func (e *Estimator) OverrunBeyondMargin(overrun, budget time.Duration) bool {
	if e.batches < OverrunWarmup {
		return false
	}
	return float64(overrun) > e.Margin()*float64(budget)
}

// CostFit fits a batch's round trip as a + b·rows by exponentially weighted least squares over
// the recent successful batches (weight decay per newer batch): one large request moves the
// per-row slope, not the time of every small batch, and old batches fade.
type CostFit struct{ w, sx, sy, sxx, sxy float64 }

// Add adds one observation of y (ns) for x rows, the older ones weighed down by decay.
func (f *CostFit) Add(x, y, decay float64) {
	f.w = decay*f.w + 1
	f.sx = decay*f.sx + x
	f.sy = decay*f.sy + y
	f.sxx = decay*f.sxx + x*x
	f.sxy = decay*f.sxy + x*y
}

// Cost returns the fitted cost. While the batches seen all had about the same rows (the spread
// of rows is under a tenth of their mean), the slope cannot be told from the intercept: the mean
// time is split half fixed, half per row — exact at the rows seen, and growing with rows beyond
// them, so a request far larger than any seen is expected to be slow rather than fast.
func (f *CostFit) Cost() BatchCost {
	if f.w <= 0 {
		return BatchCost{}
	}
	if f.sx == f.w && f.sxx == f.w {
		// Every batch had one row (97 % of the scoreboard's batches): then mx = 1 and vx = 0
		// exactly, and the split below is my/2 each, without its three divisions (the fits were
		// 4 % of the scoreboard's CPU, pprof, issue #17).
		h := f.sy / f.w / 2
		return BatchCost{Fixed: time.Duration(h), PerRowNS: h}
	}
	return f.general()
}

// general is Cost's weighted least-squares fit without the one-row shortcut (f.w > 0).
func (f *CostFit) general() BatchCost {
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
