package autoscale

import (
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

// Static keeps Count instances of Spec: it launches what is missing (after an interruption, say)
// and never scales with load.
type Static struct {
	Spec  provider.Spec
	Count int
}

// Reasons reported by the scalers in this package.
const (
	ReasonSteady    = "steady"
	ReasonReplace   = "replace missing instances"
	ReasonScaleOut  = "scale out"
	ReasonScaleIn   = "scale in"
	ReasonCooldown  = "cool-down"
	ReasonPanic     = "panic mode"
	ReasonNoMetrics = "no metrics yet"
)

// Scale implements Scaler.
func (s *Static) Scale(snap Snapshot, now time.Time) Decision {
	launching, ready := snap.Counts(s.Spec.Type)
	d := Decision{Reason: ReasonSteady}
	for n := launching + ready; n < s.Count; n++ {
		d.Launch = append(d.Launch, s.Spec)
		d.Reason = ReasonReplace
	}
	return d
}
