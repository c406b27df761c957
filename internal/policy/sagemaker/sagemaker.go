package sagemaker

import (
	"fmt"
	"math"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
)

// The sagemaker baseline: SageMaker-like target tracking on invocations per instance (MArk §5.1).

func init() {
	policy.Register(policy.Spec{Name: "sagemaker", Port: policy.PortModel, Doc: "SageMaker-like target tracking on invocations per instance, 2× over-provisioned, no batching, SageMaker hosting prices (MArk §5.1)", New: policy.ModelFactory(New)})
}

// SageMaker pricing modes (Options.Pricing).
const (
	// PricingHosting bills the SageMaker-hosted variant of the type ("ml.c5.large", at
	// SageMaker's ML-instance price), as MArk §5's baseline paid; the default.
	PricingHosting = "sagemaker"
	// PricingEC2 bills the bare EC2 type ("c5.large") at EC2's price.
	PricingEC2 = "ec2"
)

// Options configures the sagemaker policy.
type Options struct {
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

func New(env policy.Env) (policy.Model, error) {
	o := Options{OverProvisioning: autoscale.DefaultOverProvisioning, Pricing: PricingHosting}
	o.Tracking = autoscale.DefaultTargetTrackingConfig(provider.Spec{}, 1)
	o.Tracking.TargetPerInstance = 0
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	if o.Type == "" {
		t, err := policy.CheapestType(env)
		if err != nil {
			return policy.Model{}, err
		}
		o.Type = t
	}
	if !(o.OverProvisioning >= 1) {
		return policy.Model{}, fmt.Errorf("sagemaker.over_provisioning: must be ≥ 1, got %v", o.OverProvisioning)
	}
	o.Type = cost.HostedOn(o.Type) // "ml.c5.large" names the same machine as "c5.large"
	c := policy.Capacity(env, o.Type, 1)
	if c <= 0 {
		return policy.Model{}, fmt.Errorf("sagemaker.type: model %s has no profile for %q", env.Model.Name, o.Type)
	}
	launch := o.Type
	switch o.Pricing {
	case PricingHosting:
		cat := env.Catalog
		if cat == nil {
			c := cost.DefaultCatalog()
			cat = &c
		}
		if _, ok := cat.Type(cost.SageMakerType(o.Type)); ok {
			launch = cost.SageMakerType(o.Type)
		}
	case PricingEC2:
	default:
		return policy.Model{}, fmt.Errorf("sagemaker.pricing: must be %q or %q, got %q", PricingHosting, PricingEC2, o.Pricing)
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
