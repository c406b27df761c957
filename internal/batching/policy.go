package batching

import "time"

// Queue is the snapshot of one batch queue that a Policy decides on. The runtime that owns the
// queue (the gateway's batcher goroutine, or the simulator's event loop) fills it in.
type Queue struct {
	// Len is the number of requests waiting, oldest first.
	Len int
	// Oldest is the arrival time of the oldest waiting request; zero when Len == 0.
	Oldest time.Time
	// EarliestDeadline is the earliest deadline of the waiting requests; zero when Len == 0.
	EarliestDeadline time.Time
	// Free is the number of backend slots that can take a batch now. A policy may return a
	// dispatch when Free == 0; the runtime then holds it until a slot frees and asks again.
	Free int
}

// Decision is a policy's answer for one queue at one instant.
type Decision struct {
	// Dispatch is how many of the oldest waiting requests to send now as one batch; 0 means wait.
	Dispatch int
	// Next is when the runtime must ask again if no arrival or completion happens first;
	// the zero time means "only on the next event".
	Next time.Time
	// Reason says why, for metrics and traces; a constant string so that deciding never allocates.
	Reason string
}

// Outcome describes one completed batch, reported back to the policy that dispatched it.
type Outcome struct {
	// Size is the number of requests in the batch.
	Size int
	// Dispatched is when the batch left the queue; Completed is when its response arrived.
	Dispatched, Completed time.Time
	// Arrivals holds each request's arrival time; borrowed for the call, never retained.
	Arrivals []time.Time
	// Failed reports that the backend answered with an error or not at all.
	Failed bool
}

// Policy decides when a queue dispatches a batch and how large it is. Implementations are pure
// with respect to time and concurrency (ARCHITECTURE.md, keystone rule): they are given now, never
// read a clock, start no goroutine and do no I/O. A Policy is owned by one goroutine (one queue);
// it is not safe for concurrent use.
type Policy interface {
	// Decide is called after every arrival, after every completion or freed slot, and at the
	// time returned in the previous Decision's Next.
	Decide(q Queue, now time.Time) Decision
	// Observe records a completed batch; adaptive policies update their state here.
	Observe(o Outcome, now time.Time)
	// MaxBatch is the largest batch the policy would dispatch now.
	MaxBatch() int
}

// Wrapper is a Policy that decorates another without changing what it decides: Decide's
// Dispatch and Next, Observe and MaxBatch are the inner policy's, and only what a runtime does
// not act on differs (a reason renamed). A runtime that reads no reasons may drive Unwrap's
// policy directly, and its fast paths for known policies apply (the simulator's, issue #17).
type Wrapper interface {
	Policy
	Unwrap() Policy
}

// Innermost unwraps p's Wrappers.
func Innermost(p Policy) Policy {
	for {
		w, ok := p.(Wrapper)
		if !ok {
			return p
		}
		p = w.Unwrap()
	}
}

// OffsetPolicy is a Policy that also decides on nanosecond offsets from a base time, for a
// runtime that keeps its clock as offsets (the simulator's event loop, where converting every
// instant to a time.Time and back was a tenth of the scoreboard's CPU, issue #17). SetBase,
// called before any other method, fixes the base; DecideOffsets and ObserveOffsets are then
// exactly Decide and Observe on the times base + offset.
type OffsetPolicy interface {
	Policy
	// SetBase sets the time offsets count from.
	SetBase(base time.Time)
	// DecideOffsets is Decide for a queue of n requests whose oldest arrived at oldest and whose
	// earliest deadline is earliest (oldest + SLO when the requests carry none), at now. It
	// returns Decision.Dispatch and Decision.Next, -1 for none.
	DecideOffsets(n int, oldest, earliest, now int64) (dispatch int, next int64)
	// ObserveOffsets is Observe of a batch of size requests, dispatched and completed at those
	// offsets, whose requests arrived at arrivals (borrowed for the call).
	ObserveOffsets(size int, dispatched, completed int64, arrivals []int64, failed bool, now int64)
}
