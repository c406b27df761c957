package planner

import (
	"time"

	"github.com/sloserve/sloserve/internal/profile"
)

// Tuner is MArk's batching rule for one instance type (§4.3): given its service-time curve,
// RT_max and an upper bound on the batch, it returns N_batch, W_batch and the sustained rate μ*
// in requests/s (n == 0 when the type cannot meet RT_max). batching.TuneFixed has this signature;
// the caller passes it in so the planner depends on no batching implementation.
type Tuner func(curve profile.Curve, rtMax time.Duration, maxBatch int) (n int, w time.Duration, rate float64)

// Tune returns t with its batching (MaxBatch, MaxWait), capacity μ* and feasibility set from
// the instance's curve by tune, for the SLO threshold rtMax; maxBatch bounds N_batch (≤ 0: the
// curve's largest measured batch).
func Tune(t InstanceType, curve profile.Curve, rtMax time.Duration, maxBatch int, tune Tuner) InstanceType {
	n, w, rate := tune(curve, rtMax, maxBatch)
	t.MaxBatch, t.MaxWait, t.Capacity = n, w, rate
	t.Feasible = n > 0 && rate > 0
	return t
}
