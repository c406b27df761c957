package knative

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
)

// The knative baseline: Knative's concurrency autoscaler (KPA) without batching, MLProxy
// Table 3's baseline.

func init() {
	policy.Register(policy.Spec{Name: "knative", Port: policy.PortModel, Doc: "the mlproxy policy's Knative autoscaler without batching (MLProxy Table 3's baseline)", New: policy.ModelFactory(New)})
}

// Options configures the knative policy.
type Options struct {
	// Type is the pod's instance type; default: the model's cheapest per request.
	Type string `yaml:"type"`
	// KPA overrides Knative's autoscaler parameters.
	KPA autoscale.KPAConfig `yaml:"kpa"`
}

// New is Table 3's baseline: the same KPA and pods without batching. Every request in the
// VM tier (in service or queued) counts toward the KPA's observed concurrency, as Knative's
// queue-proxies report it with containerConcurrency 0 (no hard per-pod limit).
func New(env policy.Env) (policy.Model, error) {
	o := Options{KPA: autoscale.DefaultKPAConfig(provider.Spec{})}
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
	spec := provider.Spec{Model: env.Model.Name, Type: o.Type, Tier: provider.TierVM}
	o.KPA.Spec = spec
	kpa, err := autoscale.NewKPA(o.KPA)
	if err != nil {
		return policy.Model{}, fmt.Errorf("knative: %w", err)
	}
	return policy.Model{Scaler: kpa, Initial: []provider.Spec{spec}, Batching: batching.NewNone()}, nil
}
