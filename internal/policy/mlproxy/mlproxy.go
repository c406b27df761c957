package mlproxy

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
)

// The mlproxy policy: MLProxy's deadline-aware AIMD batching in front of Knative's autoscaler.

func init() {
	policy.Register(policy.Spec{Name: "mlproxy", Port: policy.PortModel, Doc: "MLProxy: deadline-aware AIMD batching in front of a Knative concurrency autoscaler (MLProxy §2–3)", New: policy.ModelFactory(New)})
}

// Options configures the mlproxy policy.
type Options struct {
	// Type is the pod's instance type; default: the model's cheapest per request.
	Type string `yaml:"type"`
	// Batching overrides the MLProxy batching parameters (batching.Config's mlproxy section and
	// max_batch, the initial Max_BS).
	Batching batching.Config `yaml:"batching"`
	// KPA overrides Knative's autoscaler parameters.
	KPA autoscale.KPAConfig `yaml:"kpa"`
}

func options(env policy.Env) (Options, provider.Spec, error) {
	o := Options{Batching: batching.DefaultConfig(), KPA: autoscale.DefaultKPAConfig(provider.Spec{})}
	o.Batching.Policy, o.Batching.SLO = batching.PolicyMLProxy, env.SLO.Threshold
	// MLProxy's experiments start at Max_BS 5 (experiment_settings_06.initial_bs).
	o.Batching.MaxBatch = 5
	if err := env.DecodeOptions(&o); err != nil {
		return o, provider.Spec{}, err
	}
	if o.Type == "" {
		t, err := policy.CheapestType(env)
		if err != nil {
			return o, provider.Spec{}, err
		}
		o.Type = t
	}
	spec := provider.Spec{Model: env.Model.Name, Type: o.Type, Tier: provider.TierVM}
	o.KPA.Spec = spec
	return o, spec, nil
}

// New is MLProxy §3's setup: Knative's KPA with concurrency target 1 (mlproxy-constants.json,
// knative_annotations) behind batching.MLProxy, which times each batch to finish by
// LatencyGuard × SLO (the original's maxBufferTimeoutMs = slo_target). A batch decided while the
// pod is busy waits at the proxy for the slot (batching.Queue.Free); the original sends it and
// Knative queues it at the pod's queue-proxy. For a FIFO pod both start it at the same moment,
// and a throw-away variant of the engine that sends at once measured the same Table 3 shape
// (docs/sim.md), so the runtime's rule stays.
func New(env policy.Env) (policy.Model, error) {
	o, spec, err := options(env)
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
