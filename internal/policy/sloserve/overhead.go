package sloserve

import (
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/policy/batch"
)

// overheadWindow is how many completed batches the function tier's overhead is the median of.
const overheadWindow = 31

// invocationOverhead is the serverless tier's per-invocation overhead, learned online from the
// buffer's completed batches: the median, over the last overheadWindow, of each batch's
// dispatch-to-answer time less the profile's time for its size. BATCH's service model
// (§III-A) is the function's execution time alone; a batch also pays what the profile does not
// hold — the invocation's round trip, (de)serialising the batch, the wait for a free instance —
// and a plan that spends the whole SLO on waiting and execution misses by that much. The median
// ignores the rare cold start; a batch faster than its profile counts as no overhead.
type invocationOverhead struct {
	ring   [overheadWindow]time.Duration
	n      int // samples held (≤ overheadWindow)
	next   int // ring index of the next sample
	median time.Duration
	sorted []time.Duration // scratch
}

// observe records one batch's excess over the profile and updates the median.
func (o *invocationOverhead) observe(excess time.Duration) {
	o.ring[o.next] = excess
	o.next = (o.next + 1) % overheadWindow
	o.n = min(o.n+1, overheadWindow)
	o.sorted = append(o.sorted[:0], o.ring[:o.n]...)
	slices.Sort(o.sorted)
	o.median = max(o.sorted[o.n/2], 0)
}

// value is the overhead in force: the median excess, 0 before any batch completed.
func (o *invocationOverhead) value() time.Duration { return o.median }

// overheadService is the function tier's service model with the learned per-invocation
// overhead added to every batch: what BATCH's online re-fits (§VI-D) and the deadline guard plan
// with.
type overheadService struct {
	batch.MemoryService
	over *invocationOverhead
}

// ServiceTime implements analytic.ServiceModel: the profile's time plus the overhead (seconds).
func (s overheadService) ServiceTime(k, memoryMB int) float64 {
	return s.MemoryService.ServiceTime(k, memoryMB) + s.over.value().Seconds()
}
