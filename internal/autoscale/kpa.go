package autoscale

import (
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

// Knative Pod Autoscaler defaults (knative/serving config-autoscaler; MLProxy ran on Knative with
// autoscaling.knative.dev/metric=concurrency and target=1, mlproxy-constants.json).
const (
	// DefaultKPATarget is the per-pod concurrency target MLProxy's services set: 1.
	DefaultKPATarget = 1.0
	// DefaultKPAUtilization is container-concurrency-target-percentage: 70 %.
	DefaultKPAUtilization = 0.7
	// DefaultKPAStableWindow is stable-window: 60 s.
	DefaultKPAStableWindow = 60 * time.Second
	// DefaultKPAPanicWindowPercent is panic-window-percentage: 10 % of the stable window.
	DefaultKPAPanicWindowPercent = 10.0
	// DefaultKPAPanicThreshold is panic-threshold-percentage: 200 %.
	DefaultKPAPanicThreshold = 2.0
	// DefaultKPAMaxScaleDownRate is max-scale-down-rate: 2 (at most halve per decision).
	DefaultKPAMaxScaleDownRate = 2.0
	// DefaultKPAMaxScaleUpRate is max-scale-up-rate: 1000.
	DefaultKPAMaxScaleUpRate = 1000.0
	// DefaultKPATick is the autoscaler's tick-interval: 2 s.
	DefaultKPATick = 2 * time.Second
)

// KPAConfig parameterises KPA.
type KPAConfig struct {
	// Spec is the pod every scale-up launches.
	Spec provider.Spec `yaml:"-"`
	// Target is the desired concurrency per pod; Utilization the fraction of it to aim at.
	Target      float64 `yaml:"target"`
	Utilization float64 `yaml:"utilization"`
	// StableWindow and PanicWindow are the averaging windows.
	StableWindow time.Duration `yaml:"stable_window"`
	PanicWindow  time.Duration `yaml:"panic_window"`
	// PanicThreshold enters panic mode when the panic-window demand reaches this many times the
	// ready pods.
	PanicThreshold float64 `yaml:"panic_threshold"`
	// MaxScaleUpRate and MaxScaleDownRate bound one decision's growth and shrink factors.
	MaxScaleUpRate   float64 `yaml:"max_scale_up_rate"`
	MaxScaleDownRate float64 `yaml:"max_scale_down_rate"`
	// Min and Max bound the pod count (MLProxy's runs keep one pod: min 1).
	Min int `yaml:"min"`
	Max int `yaml:"max"`
	// Tick is how often the autoscaler decides.
	Tick time.Duration `yaml:"tick"`
}

// DefaultKPAConfig returns Knative's defaults for spec.
func DefaultKPAConfig(spec provider.Spec) KPAConfig {
	return KPAConfig{Spec: spec, Target: DefaultKPATarget, Utilization: DefaultKPAUtilization,
		StableWindow:   DefaultKPAStableWindow,
		PanicWindow:    time.Duration(float64(DefaultKPAStableWindow) * DefaultKPAPanicWindowPercent / 100),
		PanicThreshold: DefaultKPAPanicThreshold, MaxScaleUpRate: DefaultKPAMaxScaleUpRate,
		MaxScaleDownRate: DefaultKPAMaxScaleDownRate, Min: 1, Max: 1000, Tick: DefaultKPATick}
}

// Validate reports the first field that is out of range.
func (c KPAConfig) Validate() error {
	switch {
	case !(c.Target > 0) || math.IsInf(c.Target, 0):
		return fmt.Errorf("target: must be > 0, got %v", c.Target)
	case !(c.Utilization > 0 && c.Utilization <= 1):
		return fmt.Errorf("utilization: must be in (0, 1], got %v", c.Utilization)
	case c.StableWindow <= 0 || c.PanicWindow <= 0 || c.PanicWindow > c.StableWindow:
		return fmt.Errorf("windows: need 0 < panic_window ≤ stable_window, got %v and %v", c.PanicWindow, c.StableWindow)
	case !(c.PanicThreshold >= 1):
		return fmt.Errorf("panic_threshold: must be ≥ 1, got %v", c.PanicThreshold)
	case !(c.MaxScaleUpRate > 1) || !(c.MaxScaleDownRate > 1):
		return fmt.Errorf("max_scale_up_rate/max_scale_down_rate: must be > 1, got %v and %v", c.MaxScaleUpRate, c.MaxScaleDownRate)
	case c.Min < 0 || c.Max < max(c.Min, 1):
		return fmt.Errorf("min/max: need 0 ≤ min ≤ max and max ≥ 1, got %d and %d", c.Min, c.Max)
	case c.Tick <= 0:
		return fmt.Errorf("tick: must be > 0, got %v", c.Tick)
	}
	return nil
}

// KPA is Knative's concurrency autoscaler (knative/serving pkg/autoscaler/scaling/autoscaler.go):
// every Tick, desired pods = ⌈observed concurrency / (Target × Utilization)⌉ averaged over the
// stable window, or over the panic window while in panic mode (entered when the panic-window
// demand reaches PanicThreshold × ready pods; left after a stable window without that), never
// scaling down in panic, and bounded per decision by the scale-up and scale-down rates. The
// observed concurrency is Sample.Upstream: what the pods' queue-proxies see, which behind a
// batching proxy is the number of batches, not of requests.
type KPA struct {
	cfg        KPAConfig
	next       time.Time
	panicUntil time.Time
	panicMax   int
}

// NewKPA returns a KPA for cfg.
func NewKPA(cfg KPAConfig) (*KPA, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kpa: %w", err)
	}
	return &KPA{cfg: cfg}, nil
}

func windowAvg(h []Sample, w time.Duration) (float64, bool) {
	var span time.Duration
	var sum float64
	for i := len(h) - 1; i >= 0 && span < w; i-- {
		sum += h[i].Upstream * h[i].Period.Seconds()
		span += h[i].Period
	}
	if span <= 0 {
		return 0, false
	}
	return sum / span.Seconds(), true
}

// Scale implements Scaler.
func (k *KPA) Scale(s Snapshot, now time.Time) Decision {
	c := k.cfg
	launching, ready := s.Counts(c.Spec.Type)
	current := launching + ready
	if !k.next.IsZero() && now.Before(k.next) {
		return Decision{Reason: ReasonSteady, Next: k.next}
	}
	k.next = now.Add(c.Tick)
	d := Decision{Reason: ReasonSteady, Next: k.next}
	stable, ok1 := windowAvg(s.History, c.StableWindow)
	panicC, ok2 := windowAvg(s.History, c.PanicWindow)
	per := c.Target * c.Utilization
	want := c.Min
	if ok1 && ok2 {
		dStable := int(math.Ceil(stable / per))
		dPanic := int(math.Ceil(panicC / per))
		if float64(dPanic) >= c.PanicThreshold*float64(max(ready, 1)) && dPanic > ready {
			k.panicUntil = now.Add(c.StableWindow)
		}
		want = dStable
		if now.Before(k.panicUntil) {
			d.Reason = ReasonPanic
			want = max(dPanic, k.panicMax, current)
			k.panicMax = want
		} else {
			k.panicMax = 0
		}
		base := float64(max(ready, 1))
		want = min(want, int(math.Ceil(base*c.MaxScaleUpRate)))
		want = max(want, int(math.Floor(base/c.MaxScaleDownRate)))
	}
	want = min(max(want, c.Min), c.Max)
	switch {
	case want > current:
		for n := current; n < want; n++ {
			d.Launch = append(d.Launch, c.Spec)
		}
		if d.Reason != ReasonPanic {
			d.Reason = ReasonScaleOut
		}
	case want < current:
		d.Terminate = newestFirst(s.Fleet, c.Spec.Type, current-want)
		d.Reason = ReasonScaleIn
	}
	return d
}
