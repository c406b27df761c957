package batcher

import (
	"context"
	"sync/atomic"
	"time"
)

// A Backend may wait before it runs a batch: the function tier's wait for a free or
// cold-started instance. It reports that wait with ReportStartDelay on the context Infer was
// given, and the batch's round trip in the cost estimate (admission's a + b·rows fit) leaves it
// out: a cold start of a second or a wait for an instance is no cost of every later batch, and
// fitted as one it would refuse the tier's requests for as long as the fit remembers it.

type startDelayKey struct{}

// ReportStartDelay adds d to the wait before the batch of ctx (a Backend's Infer context) ran.
func ReportStartDelay(ctx context.Context, d time.Duration) {
	if p, ok := ctx.Value(startDelayKey{}).(*atomic.Int64); ok && d > 0 {
		p.Add(int64(d))
	}
}

// withStartDelay returns ctx carrying a counter for ReportStartDelay.
func withStartDelay(ctx context.Context) (context.Context, *atomic.Int64) {
	p := new(atomic.Int64)
	return context.WithValue(ctx, startDelayKey{}, p), p
}
