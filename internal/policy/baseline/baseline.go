package baseline

import (
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/policy"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/provider"
)

// This file holds the baseline policies: fixed, sagemaker, lambda and mlproxy. Each is built
// only from shared pure parts (internal/batching, internal/autoscale, internal/dispatch).

func init() {
	policy.Register(policy.Spec{Name: "fixed", Port: policy.PortModel, Doc: "static fleet sized for the trace's peak, with fixed batching (MArk §4.3 rule)", New: policy.ModelFactory(newFixed)})
	policy.Register(policy.Spec{Name: "sagemaker", Port: policy.PortModel, Doc: "SageMaker-like target tracking on invocations per instance, 2× over-provisioned, no batching, SageMaker hosting prices (MArk §5.1)", New: policy.ModelFactory(newSageMaker)})
	policy.Register(policy.Spec{Name: "lambda", Port: policy.PortModel, Doc: "vanilla serverless: every request its own invocation, fixed memory, no batching (MArk §3, BATCH §VI)", New: policy.ModelFactory(newLambda)})
	policy.Register(policy.Spec{Name: "mlproxy", Port: policy.PortModel, Doc: "MLProxy: deadline-aware AIMD batching in front of a Knative concurrency autoscaler (MLProxy §2–3)", New: policy.ModelFactory(newMLProxy)})
	policy.Register(policy.Spec{Name: "knative", Port: policy.PortModel, Doc: "the mlproxy policy's Knative autoscaler without batching (MLProxy Table 3's baseline)", New: policy.ModelFactory(newKnative)})
}

// cheapestType returns the model's profiled instance type with the lowest price per request at
// batch 1 (price / capacity), the natural default type of a single-type policy.
func cheapestType(env policy.Env) (string, error) {
	best, bestCost := "", math.Inf(1)
	for _, name := range env.Model.Types() {
		it, ok := env.Catalog.Type(name)
		if !ok {
			continue
		}
		b := env.Model.VM[name]
		t1 := b.Curve.ServiceTime(1)
		if t1 <= 0 || t1 > env.SLO.Threshold {
			continue
		}
		c := it.PricePerHour * t1.Seconds() / float64(max(b.Slots, 1))
		if c < bestCost {
			best, bestCost = name, c
		}
	}
	if best == "" {
		return "", fmt.Errorf("model %s has no instance type in the catalog that serves a request within the SLO", env.Model.Name)
	}
	return best, nil
}

// capacity returns the requests per second one instance of typ sustains with batches of n.
func capacity(env policy.Env, typ string, n int) float64 {
	base := typ
	if i := len(typ) - len("/spot"); i > 0 && typ[i:] == "/spot" {
		base = typ[:i]
	}
	b := env.Model.VM[base]
	t := b.Curve.ServiceTime(max(n, 1))
	if t <= 0 {
		return 0
	}
	return float64(max(b.Slots, 1)) * float64(max(n, 1)) / t.Seconds()
}

// FixedOptions configures the fixed policy (policies.fixed in a sim config).
type FixedOptions struct {
	// Type is the instance type; default: the model's cheapest per request.
	Type string `yaml:"type"`
	// Count is the fleet size; 0 sizes it for the trace's peak one-minute rate at Headroom.
	Count int `yaml:"count"`
	// Headroom multiplies the peak rate when sizing (default 1.2, MArk's Times_headroom).
	Headroom float64 `yaml:"headroom"`
	// MaxBatch and MaxWait set the fixed batching; 0 tunes them with MArk §4.3 (TuneFixed).
	MaxBatch int           `yaml:"max_batch"`
	MaxWait  time.Duration `yaml:"max_wait"`
}

// DefaultHeadroom is MArk's Times_headroom (mark-constants.json): plan for 1.2 × the observed peak.
const DefaultHeadroom = 1.2

func newFixed(env policy.Env) (policy.Model, error) {
	o := FixedOptions{Headroom: DefaultHeadroom}
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	if o.Type == "" {
		t, err := cheapestType(env)
		if err != nil {
			return policy.Model{}, err
		}
		o.Type = t
	}
	base := o.Type
	if i := len(base) - len("/spot"); i > 0 && base[i:] == "/spot" {
		base = base[:i]
	}
	b, ok := env.Model.VM[base]
	if !ok {
		return policy.Model{}, fmt.Errorf("fixed.type: model %s has no profile for %q", env.Model.Name, o.Type)
	}
	cfg := batching.DefaultConfig()
	cfg.Policy, cfg.SLO = batching.PolicyFixed, env.SLO.Threshold
	if o.MaxBatch > 0 {
		cfg.MaxBatch, cfg.MaxWait = o.MaxBatch, o.MaxWait
	} else {
		// MArk §4.3 with the SLO budget halved: the rule bounds W + T_b by RT_max, which leaves no
		// room for queueing; half keeps tails inside the SLO under load (our choice).
		n, w, _ := batching.TuneFixed(b.Curve, env.SLO.Threshold/2, 0)
		if n == 0 {
			n, w = 1, 0
		}
		cfg.MaxBatch, cfg.MaxWait = n, w
	}
	bp, err := batching.New(cfg)
	if err != nil {
		return policy.Model{}, fmt.Errorf("fixed: %w", err)
	}
	if o.Count <= 0 {
		c := capacity(env, o.Type, cfg.MaxBatch)
		if c <= 0 {
			return policy.Model{}, fmt.Errorf("fixed: %s has no capacity", o.Type)
		}
		o.Count = max(1, int(math.Ceil(env.Load.PeakRPS*o.Headroom/c)))
	}
	spec := provider.Spec{Model: env.Model.Name, Type: o.Type, Tier: provider.TierVM}
	initial := make([]provider.Spec, o.Count)
	for i := range initial {
		initial[i] = spec
	}
	return policy.Model{Scaler: &autoscale.Static{Spec: spec, Count: o.Count}, Initial: initial, Batching: bp}, nil
}

// SageMaker pricing modes (SageMakerOptions.Pricing).
const (
	// SageMakerPricingHosting bills the SageMaker-hosted variant of the type ("ml.c5.large", at
	// SageMaker's ML-instance price), as MArk §5's baseline paid; the default.
	SageMakerPricingHosting = "sagemaker"
	// SageMakerPricingEC2 bills the bare EC2 type ("c5.large") at EC2's price.
	SageMakerPricingEC2 = "ec2"
)

// SageMakerOptions configures the sagemaker policy.
type SageMakerOptions struct {
	// Type is the instance type the endpoint runs on (an EC2 type of the model's profile, e.g.
	// c5.large); default: the model's cheapest per request.
	Type string `yaml:"type"`
	// Pricing is "sagemaker" (default: launch the SageMaker-hosted type "ml.<type>" and pay
	// SageMaker's hosting price, as MArk §5.1's baseline did; falls back to the EC2 type when the
	// catalog has no "ml.<type>" entry) or "ec2" (launch and pay the bare EC2 type).
	Pricing string `yaml:"pricing"`
	// OverProvisioning divides an instance's capacity to get the tracking target (default 2).
	OverProvisioning float64 `yaml:"over_provisioning"`
	// Tracking overrides AWS's target-tracking parameters.
	Tracking autoscale.TargetTrackingConfig `yaml:"tracking"`
}

func newSageMaker(env policy.Env) (policy.Model, error) {
	o := SageMakerOptions{OverProvisioning: autoscale.DefaultOverProvisioning, Pricing: SageMakerPricingHosting}
	o.Tracking = autoscale.DefaultTargetTrackingConfig(provider.Spec{}, 1)
	o.Tracking.TargetPerInstance = 0
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	if o.Type == "" {
		t, err := cheapestType(env)
		if err != nil {
			return policy.Model{}, err
		}
		o.Type = t
	}
	if !(o.OverProvisioning >= 1) {
		return policy.Model{}, fmt.Errorf("sagemaker.over_provisioning: must be ≥ 1, got %v", o.OverProvisioning)
	}
	o.Type = cost.HostedOn(o.Type) // "ml.c5.large" names the same machine as "c5.large"
	c := capacity(env, o.Type, 1)
	if c <= 0 {
		return policy.Model{}, fmt.Errorf("sagemaker.type: model %s has no profile for %q", env.Model.Name, o.Type)
	}
	launch := o.Type
	switch o.Pricing {
	case SageMakerPricingHosting:
		cat := env.Catalog
		if cat == nil {
			c := cost.DefaultCatalog()
			cat = &c
		}
		if _, ok := cat.Type(cost.SageMakerType(o.Type)); ok {
			launch = cost.SageMakerType(o.Type)
		}
	case SageMakerPricingEC2:
	default:
		return policy.Model{}, fmt.Errorf("sagemaker.pricing: must be %q or %q, got %q", SageMakerPricingHosting, SageMakerPricingEC2, o.Pricing)
	}
	spec := provider.Spec{Model: env.Model.Name, Type: launch, Tier: provider.TierVM, MaxBatch: 1}
	tc := o.Tracking
	tc.Spec = spec
	if tc.TargetPerInstance == 0 {
		tc.TargetPerInstance = c * tc.Period.Seconds() / o.OverProvisioning
	}
	tt, err := autoscale.NewTargetTracking(tc)
	if err != nil {
		return policy.Model{}, fmt.Errorf("sagemaker: %w", err)
	}
	// Start with the fleet the target asks for at the trace's mean rate.
	n := min(max(tc.Min, int(math.Ceil(env.Load.MeanRPS*tc.Period.Seconds()/tc.TargetPerInstance)), 1), tc.Max)
	initial := make([]provider.Spec, n)
	for i := range initial {
		initial[i] = spec
	}
	return policy.Model{Scaler: tt, Initial: initial, Batching: batching.NewNone()}, nil
}

// LambdaOptions configures the lambda policy.
type LambdaOptions struct {
	// MemoryMB is the function memory (default 3008 MB: MArk §3 Table 2's "3 GB for latency
	// comparable with c5.large", BATCH's largest).
	MemoryMB int `yaml:"memory_mb"`
}

func newLambda(env policy.Env) (policy.Model, error) {
	o := LambdaOptions{MemoryMB: policy.DefaultLambdaMemoryMB}
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	if o.MemoryMB <= 0 {
		return policy.Model{}, fmt.Errorf("lambda.memory_mb: must be > 0, got %d", o.MemoryMB)
	}
	if env.Model.Serverless == nil {
		return policy.Model{}, fmt.Errorf("lambda: model %s has no serverless profile", env.Model.Name)
	}
	return policy.Model{
		Router:     policy.RouterFunc(func(policy.Request, policy.TierView, time.Time) policy.Route { return policy.RouteServerless }),
		Serverless: &policy.Serverless{MemoryMB: o.MemoryMB, Batching: batching.NewNone()},
	}, nil
}

// MLProxyOptions configures the mlproxy and knative policies.
type MLProxyOptions struct {
	// Type is the pod's instance type; default: the model's cheapest per request.
	Type string `yaml:"type"`
	// Batching overrides the MLProxy batching parameters (batching.Config's mlproxy section and
	// max_batch, the initial Max_BS).
	Batching batching.Config `yaml:"batching"`
	// KPA overrides Knative's autoscaler parameters.
	KPA autoscale.KPAConfig `yaml:"kpa"`
}

func mlproxyOptions(env policy.Env) (MLProxyOptions, provider.Spec, error) {
	o := MLProxyOptions{Batching: batching.DefaultConfig(), KPA: autoscale.DefaultKPAConfig(provider.Spec{})}
	o.Batching.Policy, o.Batching.SLO = batching.PolicyMLProxy, env.SLO.Threshold
	// MLProxy's experiments start at Max_BS 5 (experiment_settings_06.initial_bs).
	o.Batching.MaxBatch = 5
	if err := env.DecodeOptions(&o); err != nil {
		return o, provider.Spec{}, err
	}
	if o.Type == "" {
		t, err := cheapestType(env)
		if err != nil {
			return o, provider.Spec{}, err
		}
		o.Type = t
	}
	spec := provider.Spec{Model: env.Model.Name, Type: o.Type, Tier: provider.TierVM}
	o.KPA.Spec = spec
	return o, spec, nil
}

// newMLProxy is MLProxy §3's setup: Knative's KPA with concurrency target 1 (mlproxy-constants.json,
// knative_annotations) behind batching.MLProxy, which times each batch to finish by
// LatencyGuard × SLO (the original's maxBufferTimeoutMs = slo_target). A batch decided while the
// pod is busy waits at the proxy for the slot (batching.Queue.Free); the original sends it and
// Knative queues it at the pod's queue-proxy. For a FIFO pod both start it at the same moment,
// and a throw-away variant of the engine that sends at once measured the same Table 3 shape
// (docs/sim.md), so the runtime's rule stays.
func newMLProxy(env policy.Env) (policy.Model, error) {
	o, spec, err := mlproxyOptions(env)
	if err != nil {
		return policy.Model{}, err
	}
	o.Batching.Policy = batching.PolicyMLProxy
	bp, err := batching.New(o.Batching)
	if err != nil {
		return policy.Model{}, fmt.Errorf("mlproxy: %w", err)
	}
	kpa, err := autoscale.NewKPA(o.KPA)
	if err != nil {
		return policy.Model{}, fmt.Errorf("mlproxy: %w", err)
	}
	return policy.Model{Scaler: kpa, Initial: []provider.Spec{spec}, Batching: bp}, nil
}

// newKnative is Table 3's baseline: the same KPA and pods without batching. Every request in the
// VM tier (in service or queued) counts toward the KPA's observed concurrency, as Knative's
// queue-proxies report it with containerConcurrency 0 (no hard per-pod limit).
func newKnative(env policy.Env) (policy.Model, error) {
	o, spec, err := mlproxyOptions(env)
	if err != nil {
		return policy.Model{}, err
	}
	kpa, err := autoscale.NewKPA(o.KPA)
	if err != nil {
		return policy.Model{}, fmt.Errorf("knative: %w", err)
	}
	return policy.Model{Scaler: kpa, Initial: []provider.Spec{spec}, Batching: batching.NewNone()}, nil
}
