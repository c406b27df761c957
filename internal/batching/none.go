package batching

import "time"

// Reasons reported in Decision.Reason; constant so that deciding never allocates.
const (
	// ReasonEmpty: nothing is waiting.
	ReasonEmpty = "empty"
	// ReasonUnbatched: the none policy sends each request alone at once.
	ReasonUnbatched = "unbatched"
	// ReasonFull: the queue holds a full batch.
	ReasonFull = "full"
	// ReasonWindow: the oldest request has waited the batching window (fixed's W_batch).
	ReasonWindow = "window"
	// ReasonDeadline: a waiting request has reached its deadline.
	ReasonDeadline = "deadline"
	// ReasonWait: waiting for more requests until Next.
	ReasonWait = "wait"
	// ReasonTimeout: MLProxy's dispatch timeout TO (Eq. 2) has run out.
	ReasonTimeout = "timeout"
)

// None is the policy without batching: every request is dispatched alone as soon as it is queued.
type None struct{}

var _ Policy = None{}

// NewNone returns the none policy.
func NewNone() None { return None{} }

// Decide dispatches one request when any waits; if more wait it asks to be called again at now.
func (None) Decide(q Queue, now time.Time) Decision {
	if q.Len <= 0 {
		return Decision{Reason: ReasonEmpty}
	}
	d := Decision{Dispatch: 1, Reason: ReasonUnbatched}
	if q.Len > 1 {
		d.Next = now
	}
	return d
}

// DecideOffsets is Decide on nanosecond offsets (Fixed.DecideOffsets): one request when any
// waits, and Next now (offset now) when more wait, -1 otherwise.
func (None) DecideOffsets(n int, now int64) (dispatch int, next int64) {
	switch {
	case n <= 0:
		return 0, -1
	case n > 1:
		return 1, now
	}
	return 1, -1
}

// Observe does nothing: none does not adapt.
func (None) Observe(Outcome, time.Time) {}

// MaxBatch is 1.
func (None) MaxBatch() int { return 1 }
