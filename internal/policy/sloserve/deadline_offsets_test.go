package sloserve

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/analytic"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/profile"
)

// TestDeadlineBufferOffsetsMatchTimes: the serverless buffer's deadline guard decides on
// offsets (batching.OffsetPolicy, the simulator's path) as on the times base + offset, for
// random plans, queues, deadlines and instants — the guard firing, moving the wake-up and
// standing aside.
func TestDeadlineBufferOffsetsMatchTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := int64(time.Millisecond)
	curve := profile.InferAllInception().VM["c5.large"].Curve // any batch-time curve
	fired := 0
	for trial := range 20000 {
		plan := analytic.Plan{MemoryMB: 3008, MaxBatch: 1 + rng.IntN(8), Timeout: time.Duration(rng.IntN(300)) * time.Millisecond}
		slack := time.Duration(rng.IntN(100)) * time.Millisecond
		byTime := &deadlineBuffer{buf: analytic.NewBufferPolicy(analytic.NewPinnedOnline(plan)), curve: curve, slack: slack}
		byOff := &deadlineBuffer{buf: analytic.NewBufferPolicy(analytic.NewPinnedOnline(plan)), curve: curve, slack: slack}
		byOff.SetBase(base)
		n := rng.IntN(10)
		now := int64(rng.IntN(1000)) * ms
		oldest := now - int64(rng.IntN(400))*ms
		earliest := oldest + int64(rng.IntN(600))*ms
		q := batching.Queue{Len: n}
		if n > 0 {
			q.Oldest, q.EarliestDeadline = base.Add(time.Duration(oldest)), base.Add(time.Duration(earliest))
		}
		d := byTime.Decide(q, base.Add(time.Duration(now)))
		want := int64(-1)
		if !d.Next.IsZero() {
			want = int64(d.Next.Sub(base))
		}
		if k, nx := byOff.DecideOffsets(n, oldest, earliest, now); k != d.Dispatch || nx != want {
			t.Fatalf("trial %d: plan %+v, %d queued, oldest %d, earliest %d, now %d: offsets (%d, %d), times %+v", trial, plan, n, oldest, earliest, now, k, nx, d)
		}
		if d.Reason == slReasonGuard {
			fired++
		}
	}
	if fired == 0 {
		t.Error("the guard never fired: the test exercises too little")
	}
}
