package policytest

import (
	"reflect"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/policy/cocktail"
)

// Ensemble runs the ensemble port's conformance suite on the policy registered under name: it
// builds a cocktail.Policy named name that validates, two builds are the same strategy (no state
// of their own), and its Alg. 2 sizing is pure and sane on a pool: the same decision twice for
// the same facts, a need that grows with the load, and recycling only idle instances.
func Ensemble(t *testing.T, name string) {
	t.Helper()
	build := func() cocktail.Policy {
		v, err := policy.Build(policy.PortEnsemble, name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, ok := v.(cocktail.Policy)
		if !ok {
			t.Fatalf("%s: New returned %T, not a cocktail.Policy", name, v)
		}
		return p
	}
	a, b := build(), build()
	if a.Name != name {
		t.Errorf("%s: Policy.Name %q", name, a.Name)
	}
	if err := a.Validate(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	a.Slots, b.Slots = nil, nil // functions compare unequal; their results are checked below
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%s: two builds differ:\n%+v\n%+v", name, a, b)
	}
	p := build()
	sz := p.Sizing()
	now := time.Unix(1000, 0)
	pool := cocktail.Pool{Model: ensemble.Model{Name: "m", Latency: 100 * time.Millisecond, PackingFactor: 4}, Weight: 1, Static: 8,
		Types: []ensemble.InstanceType{{Name: "small", CostPerHour: 0.1, PackingFactor: 4}},
		Instances: []cocktail.Instance{{ID: "busy", Slots: 4, Busy: 1, Accepting: true, IdleSince: now.Add(-time.Hour)},
			{ID: "idle", Slots: 4, Accepting: true, IdleSince: now.Add(-time.Hour)}}}
	d1, err1 := sz.Size(pool, 10, 400*time.Millisecond, now)
	d2, err2 := sz.Size(pool, 10, 400*time.Millisecond, now)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(d1, d2) {
		t.Errorf("%s: Size twice on the same facts: %+v, %v; %+v, %v", name, d1, err1, d2, err2)
	}
	hi, err := sz.Size(pool, 1000, 400*time.Millisecond, now)
	if err != nil || (p.Scaling == cocktail.ScaleWeighted && hi.Need <= d1.Need) {
		t.Errorf("%s: need at 1000 rps %v ≤ at 10 rps %v (%v)", name, hi.Need, d1.Need, err)
	}
	for _, id := range append(d1.Terminate, hi.Terminate...) {
		if id != "idle" {
			t.Errorf("%s: recycled %q, which is busy", name, id)
		}
	}
}
