package autoscale

import (
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

// Target-tracking defaults: AWS Application Auto Scaling as SageMaker endpoints use it
// (metric SageMakerVariantInvocationsPerInstance, one-minute datapoints).
const (
	// DefaultTrackingPeriod is the metric period: one minute.
	DefaultTrackingPeriod = time.Minute
	// DefaultScaleOutCooldown and DefaultScaleInCooldown are SageMaker's default cool-downs.
	DefaultScaleOutCooldown = 300 * time.Second
	DefaultScaleInCooldown  = 300 * time.Second
	// DefaultScaleOutDatapoints is how many consecutive periods above target trigger a scale-out
	// (the high alarm target tracking creates: 3 of 3 one-minute datapoints).
	DefaultScaleOutDatapoints = 3
	// DefaultScaleInDatapoints is how many consecutive periods below ScaleInRatio × target
	// trigger a scale-in (the low alarm: 15 of 15 datapoints).
	DefaultScaleInDatapoints = 15
	// DefaultScaleInRatio is the low alarm's threshold relative to the target: 90 %.
	DefaultScaleInRatio = 0.9
	// DefaultOverProvisioning is the factor MArk §5.1 sets for SageMaker, following AWS's
	// load-testing guide: the target is half of an instance's measured capacity.
	DefaultOverProvisioning = 2.0
)

// TargetTrackingConfig parameterises TargetTracking.
type TargetTrackingConfig struct {
	// Spec is the instance every scale-out launches.
	Spec provider.Spec `yaml:"-"`
	// TargetPerInstance is the tracked value of invocations per ready instance per Period.
	TargetPerInstance float64 `yaml:"target_per_instance"`
	// Min and Max bound the fleet size (instances).
	Min int `yaml:"min"`
	Max int `yaml:"max"`
	// Period is the metric's datapoint length.
	Period time.Duration `yaml:"period"`
	// ScaleOutCooldown is the least time between two scale-outs; ScaleInCooldown the least time
	// after any scaling activity before a scale-in.
	ScaleOutCooldown time.Duration `yaml:"scale_out_cooldown"`
	ScaleInCooldown  time.Duration `yaml:"scale_in_cooldown"`
	// ScaleOutDatapoints and ScaleInDatapoints are the alarms' consecutive-period counts.
	ScaleOutDatapoints int `yaml:"scale_out_datapoints"`
	ScaleInDatapoints  int `yaml:"scale_in_datapoints"`
	// ScaleInRatio is the low alarm's threshold as a fraction of the target, in (0, 1].
	ScaleInRatio float64 `yaml:"scale_in_ratio"`
}

// DefaultTargetTrackingConfig returns AWS's defaults for spec with the given target.
func DefaultTargetTrackingConfig(spec provider.Spec, target float64) TargetTrackingConfig {
	return TargetTrackingConfig{Spec: spec, TargetPerInstance: target, Min: 1, Max: 1000,
		Period: DefaultTrackingPeriod, ScaleOutCooldown: DefaultScaleOutCooldown, ScaleInCooldown: DefaultScaleInCooldown,
		ScaleOutDatapoints: DefaultScaleOutDatapoints, ScaleInDatapoints: DefaultScaleInDatapoints, ScaleInRatio: DefaultScaleInRatio}
}

// Validate reports the first field that is out of range.
func (c TargetTrackingConfig) Validate() error {
	switch {
	case !(c.TargetPerInstance > 0) || math.IsInf(c.TargetPerInstance, 0):
		return fmt.Errorf("target_per_instance: must be > 0, got %v", c.TargetPerInstance)
	case c.Min < 0 || c.Max < max(c.Min, 1):
		return fmt.Errorf("min/max: need 0 ≤ min ≤ max and max ≥ 1, got %d and %d", c.Min, c.Max)
	case c.Period <= 0:
		return fmt.Errorf("period: must be > 0, got %v", c.Period)
	case c.ScaleOutCooldown < 0 || c.ScaleInCooldown < 0:
		return fmt.Errorf("cool-downs: must be ≥ 0, got %v and %v", c.ScaleOutCooldown, c.ScaleInCooldown)
	case c.ScaleOutDatapoints < 1 || c.ScaleInDatapoints < 1:
		return fmt.Errorf("datapoints: must be ≥ 1, got %d and %d", c.ScaleOutDatapoints, c.ScaleInDatapoints)
	case !(c.ScaleInRatio > 0 && c.ScaleInRatio <= 1):
		return fmt.Errorf("scale_in_ratio: must be in (0, 1], got %v", c.ScaleInRatio)
	}
	return nil
}

// TargetTracking is AWS target-tracking scaling as SageMaker endpoints use it (the baseline of
// MArk §5.1): every Period it computes the metric "invocations per ready instance" over the last
// Period; after ScaleOutDatapoints consecutive datapoints above the target (and outside the
// scale-out cool-down) it sets the fleet to ⌈current × metric / target⌉; after ScaleInDatapoints
// consecutive datapoints below ScaleInRatio × target (and outside the scale-in cool-down) it
// shrinks the fleet the same way, terminating the newest idle instances first.
type TargetTracking struct {
	cfg                   TargetTrackingConfig
	next                  time.Time
	above, below          int
	lastScaleOut, lastAny time.Time
}

// NewTargetTracking returns a TargetTracking scaler for cfg.
func NewTargetTracking(cfg TargetTrackingConfig) (*TargetTracking, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("target tracking: %w", err)
	}
	return &TargetTracking{cfg: cfg}, nil
}

// Scale implements Scaler.
func (t *TargetTracking) Scale(s Snapshot, now time.Time) Decision {
	c := t.cfg
	launching, ready := s.Counts(c.Spec.Type)
	current := launching + ready
	if current < c.Min {
		d := Decision{Reason: ReasonReplace, Next: t.next}
		for ; current < c.Min; current++ {
			d.Launch = append(d.Launch, c.Spec)
		}
		return d
	}
	if t.next.IsZero() {
		t.next = now.Add(c.Period)
		return Decision{Reason: ReasonNoMetrics, Next: t.next}
	}
	if now.Before(t.next) {
		return Decision{Reason: ReasonSteady, Next: t.next}
	}
	t.next = now.Add(c.Period)
	var arrivals int
	var span time.Duration
	for i := len(s.History) - 1; i >= 0 && span < c.Period; i-- {
		arrivals += s.History[i].Arrivals
		span += s.History[i].Period
	}
	if span <= 0 {
		return Decision{Reason: ReasonNoMetrics, Next: t.next}
	}
	perPeriod := float64(arrivals) * float64(c.Period) / float64(span)
	metric := perPeriod / float64(max(ready, 1))
	switch {
	case metric > c.TargetPerInstance:
		t.above, t.below = t.above+1, 0
	case metric < c.ScaleInRatio*c.TargetPerInstance:
		t.below, t.above = t.below+1, 0
	default:
		t.above, t.below = 0, 0
	}
	desired := int(math.Ceil(float64(max(ready, 1)) * metric / c.TargetPerInstance))
	desired = min(max(desired, c.Min, 1), c.Max)
	d := Decision{Reason: ReasonSteady, Next: t.next}
	switch {
	case t.above >= c.ScaleOutDatapoints && desired > current:
		if !t.lastScaleOut.IsZero() && now.Sub(t.lastScaleOut) < c.ScaleOutCooldown {
			d.Reason = ReasonCooldown
			return d
		}
		for n := current; n < desired; n++ {
			d.Launch = append(d.Launch, c.Spec)
		}
		d.Reason = ReasonScaleOut
		t.lastScaleOut, t.lastAny, t.above = now, now, 0
	case t.below >= c.ScaleInDatapoints && desired < current:
		if !t.lastAny.IsZero() && now.Sub(t.lastAny) < c.ScaleInCooldown {
			d.Reason = ReasonCooldown
			return d
		}
		d.Terminate = newestFirst(s.Fleet, c.Spec.Type, current-desired)
		d.Reason = ReasonScaleIn
		t.lastAny, t.below = now, 0
	}
	return d
}

// newestFirst returns up to n ids of launching or ready members of typ, launching ones first,
// then idle ready ones, newest first, then busy ones.
func newestFirst(fleet []Member, typ string, n int) []string {
	var out []string
	pass := func(ok func(m Member) bool) {
		for i := len(fleet) - 1; i >= 0 && len(out) < n; i-- {
			m := fleet[i]
			if m.Type == typ && ok(m) {
				out = append(out, m.ID)
			}
		}
	}
	pass(func(m Member) bool { return m.State == provider.StateLaunching })
	pass(func(m Member) bool { return m.State == provider.StateReady && m.Busy == 0 })
	pass(func(m Member) bool { return m.State == provider.StateReady && m.Busy > 0 })
	return out
}
