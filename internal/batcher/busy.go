package batcher

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// Sharing an instance's slots between gateway replicas (issue #19). Several gateways may send
// batches to the same workers; none of them knows what the others have in flight. Each worker
// therefore enforces its own concurrency (`sloserve worker --max-in-flight`, which the local
// provider sets to the largest model slots) and answers a batch beyond it at once with 429,
// before running it. The gateway that gets the 429 treats the instance as
// busy for a short back-off — its free() counts no slot there, so the model's batching policy
// keeps deciding with the slots it can actually use — and puts the batch back at the head of
// the queue, to go to another instance (or the same one once the back-off ends) before the
// requests' deadlines. A worker that is draining answers 503: the batch goes to another instance
// if the model has one (like a batch to an unreachable instance), the draining one rests. A
// request is refused with ErrInstancesBusy (429, Retry-After) once its deadline no longer leaves
// time for its batch (rather than a 504 later), or after maxBusyTries bounces, so a fleet
// overloaded by every replica together sheds load instead of queueing it unboundedly.

// ErrInstancesBusy means the model's instances kept refusing the request's batch as overloaded
// (their own concurrency limit, shared with other gateway replicas): retry later (429).
var ErrInstancesBusy = fmt.Errorf("gateway: every instance is busy: %w", oip.ErrOverloaded)

// Busy back-off bounds (see busyBackoff) and the bounces a request may take.
const (
	minBusyBackoff = time.Millisecond
	maxBusyBackoff = 50 * time.Millisecond
	maxBusyTries   = 64
)

// busyAnswer reports whether err is an instance's 429: its in-flight limit refused the batch
// before running it.
func busyAnswer(err error) bool {
	var se *oip.StatusError
	return errors.As(err, &se) && se.Code == http.StatusTooManyRequests
}

// goneAnswer reports whether err is an instance's 503: it is draining (or otherwise not taking
// batches) and ran nothing; the batch is retried elsewhere like one to an unreachable instance.
func goneAnswer(err error) bool {
	var se *oip.StatusError
	return errors.As(err, &se) && se.Code == http.StatusServiceUnavailable
}

// busyBackoff is how long an instance that answered busy streak times in a row takes no batch
// from this gateway: half the batch's estimated round trip (a slot the other replicas hold frees,
// on average, within about that), doubled for each further busy answer in a row (the other
// replicas keep it full), at most twice the round trip — an instance is neither hammered nor
// left idle for long: every replica backing off at once must not starve a worker whose batches
// take a millisecond — and always within [minBusyBackoff, maxBusyBackoff]. A batch it completes
// resets the streak.
func busyBackoff(expect time.Duration, streak int) time.Duration {
	d, most := max(expect/2, minBusyBackoff), max(2*expect, minBusyBackoff)
	for i := 1; i < streak && d < most; i++ {
		d *= 2
	}
	return min(d, most, maxBusyBackoff)
}

// bounce handles a completed flight whose instance answered busy: the instance backs off, and
// each request goes back to the head of the queue unless its deadline leaves less than the
// batch's estimated round trip after the back-off, or it has bounced maxBusyTries times (then it
// is refused with ErrInstancesBusy). Runs on the batcher goroutine.
func (b *Batcher) bounce(f *flight, now time.Time) {
	f.inst.busyStreak++
	backoff := busyBackoff(f.expect, f.inst.busyStreak)
	until := now.Add(backoff)
	if until.After(f.inst.busyUntil) {
		f.inst.busyUntil = until
	}
	b.bounces.Add(1)
	if o, ok := b.obs.(BounceObserver); ok {
		o.Bounced(backoff)
	}
	back := f.calls[:0:0]
	for _, c := range f.calls {
		c.bounces++
		c.tries-- // a bounce ran nothing: it does not use up the call's retries (maxTries)
		if c.bounces >= maxBusyTries || !until.Add(f.expect).Before(c.deadline) {
			c.done <- result{err: oip.WithRetryAfter(ErrInstancesBusy, time.Second)}
			continue
		}
		c.state.Store(callWaiting)
		b.enter(c)
		back = append(back, c)
	}
	b.q = append(back, b.q...)
}

// Bounces is the number of batches an instance refused as busy (429 or 503) that went back to
// the queue.
func (b *Batcher) Bounces() int64 { return b.bounces.Load() }
