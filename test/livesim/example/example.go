// Package example is the smallest complete policy: one package whose init registers it, with its
// options, their defaults and its factory. It exists to prove that adding a policy is this
// package plus its doc page (docs/sim.md, "Adding a policy"): test/livesim runs it in the
// simulator and in the live controller, unchanged, and checks both decide the same.
package example

import (
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
)

func init() {
	policy.Register(policy.Spec{Name: "example", Port: policy.PortModel,
		Doc: "example: one instance more above high × capacity, one fewer below low × capacity (a step scaler)",
		New: policy.ModelFactory(New)})
}

// Options configures the example policy (policies.example in a sim or serve config).
type Options struct {
	// High and Low are fractions of the fleet's capacity: above High one instance is launched,
	// below Low one is terminated (defaults 0.8 and 0.3).
	High float64 `yaml:"high"`
	Low  float64 `yaml:"low"`
}

// New builds the example policy for env: its type is the model's cheapest per request.
func New(env policy.Env) (policy.Model, error) {
	o := Options{High: 0.8, Low: 0.3}
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	if !(o.Low >= 0 && o.Low < o.High) {
		return policy.Model{}, fmt.Errorf("example.low/high: need 0 ≤ low < high, got %v, %v", o.Low, o.High)
	}
	typ, err := policy.CheapestType(env)
	if err != nil {
		return policy.Model{}, err
	}
	s := &step{o: o, spec: provider.Spec{Model: env.Model.Name, Type: typ, Tier: provider.TierVM}, capacity: policy.Capacity(env, typ, 1)}
	return policy.Model{Scaler: s, Initial: []provider.Spec{s.spec}}, nil
}

// step is the scaler: pure, its only state the options.
type step struct {
	o        Options
	spec     provider.Spec
	capacity float64 // requests/s of one instance
}

func (s *step) Scale(snap autoscale.Snapshot, now time.Time) autoscale.Decision {
	if len(snap.History) == 0 {
		return autoscale.Decision{Reason: "example: no sample yet"}
	}
	h := snap.History[len(snap.History)-1]
	rate := float64(h.Arrivals) / h.Period.Seconds()
	var live []string
	for _, m := range snap.Fleet {
		if m.State == provider.StateLaunching || m.State == provider.StateReady {
			live = append(live, m.ID)
		}
	}
	capacity := s.capacity * float64(len(live))
	switch {
	case rate > s.o.High*capacity:
		return autoscale.Decision{Launch: []provider.Spec{s.spec}, Reason: "example: above high"}
	case len(live) > 1 && rate < s.o.Low*capacity:
		return autoscale.Decision{Terminate: live[len(live)-1:], Reason: "example: below low"}
	}
	return autoscale.Decision{Reason: "example: hold"}
}
