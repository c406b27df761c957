package batcher

import (
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// Faults of instances, and how the batcher answers them so that every request still gets
// exactly one answer:
//
//   - crash or connection error (nothing computed): the batch goes back to the head of the queue
//     and is sent once more to another instance within its deadline (maxTries); the instance takes
//     no batch for DownFor; with no other instance the batch fails with 503;
//   - hang (a stopped or wedged worker) or a slow worker: an attempt that may be retried is
//     abandoned after its hang timeout (attemptTimeout), the instance takes no batch for DownFor,
//     and the batch is retried like a crashed one; the last attempt is bounded by the requests'
//     deadlines plus one SLO threshold and then fails with 504 (ErrBatchTimeout), so a hung worker
//     holds no request for longer than twice its SLO;
//   - an instance's error answer: 502 (or its own 4xx for a batch of one, 503 when overloaded).
//
// Inference is idempotent, so a batch abandoned on a hung instance may safely be computed twice.

// ErrBatchTimeout means the instance did not answer a batch before the batch's time ran out
// (a hung or very slow worker); the batch's requests are answered 504.
var ErrBatchTimeout = fmt.Errorf("gateway: instance did not answer the batch in time: %w", oip.ErrDeadline)

// hangFactor is how many estimated batch round trips an attempt may take before the instance
// is deemed hung and the batch is retried elsewhere: generous, so that the ordinary variance of
// a loaded machine (p99 of a batch is ~3× its mean here) does not trigger retries.
const hangFactor = 4

// attemptTimeout returns how long one attempt of a batch may wait for its instance. A first
// attempt (retry possible) may take max(hangFactor · batchTime, slo/4) — enough that a retry
// still fits in the SLO — once a batch time has been measured; the last attempt may run until
// the latest deadline of its requests plus one SLO threshold. Both are capped by the backend
// timeout. attemptTimeout is pure.
func attemptTimeout(canRetry bool, batchTime, slo, backend time.Duration, latest, now time.Time) time.Duration {
	last := min(backend, max(latest.Sub(now), 0)+slo)
	if canRetry && batchTime > 0 {
		return max(min(last, max(hangFactor*batchTime, slo/4)), time.Millisecond)
	}
	return max(last, time.Millisecond)
}

// latestDeadline returns the latest deadline among calls.
func latestDeadline(calls []*call) time.Time {
	var latest time.Time
	for _, c := range calls {
		if c.deadline.After(latest) {
			latest = c.deadline
		}
	}
	return latest
}
