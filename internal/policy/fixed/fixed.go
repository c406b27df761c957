package fixed

import (
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
)

// The fixed baseline: a static fleet sized for the trace's peak with MArk §4.3's fixed batching.

func init() {
	policy.Register(policy.Spec{Name: "fixed", Port: policy.PortModel, Caps: policy.CapsConfiguredFleet, Doc: "static fleet sized for the trace's peak, with fixed batching (MArk §4.3 rule)", New: policy.ModelFactory(New)})
}

// Options configures the fixed policy (policies.fixed in a sim config).
type Options struct {
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

func New(env policy.Env) (policy.Model, error) {
	o := Options{Headroom: DefaultHeadroom}
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
		c := policy.Capacity(env, o.Type, cfg.MaxBatch)
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
