package policytest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// ModelSteps is how many sampling periods (one minute each) Model drives a policy's scaler.
const ModelSteps = 90

// Model checks the Model policy registered under name, in a world of the default catalog and
// Inception's profile (profile.InferAllInception) at 200 ms / 98 %:
//   - it serves somewhere: a VM scaler or a serverless tier (a registration that points to
//     another world answers policy.ErrNotImplemented and is not driven);
//   - two instances built through the registry and driven with the same facts decide the same,
//     sample for sample — the scaler's launches, terminations, reasons and next times, and the
//     router's route for the same request and tier view;
//   - every launch names an instance type of the catalog on the VM tier, every termination a
//     member of the fleet.
func Model(t *testing.T, name string) {
	t.Helper()
	cat := cost.DefaultCatalog()
	start := time.Date(2017, 5, 25, 0, 0, 0, 0, time.UTC)
	env := policy.Env{Catalog: &cat, Model: profile.InferAllInception(), SLO: slo.Spec{Threshold: 200 * time.Millisecond, Target: 0.98},
		Load: policy.LoadStats{MeanRPS: 50, PeakRPS: 120}, Start: start}
	a, err := policy.NewModel(name, env)
	if errors.Is(err, policy.ErrNotImplemented) {
		t.Logf("%s: points to another world: %v", name, err)
		return
	}
	if err != nil {
		t.Fatalf("NewModel(%q): %v", name, err)
	}
	b, err := policy.NewModel(name, env)
	if err != nil {
		t.Fatalf("NewModel(%q) again: %v", name, err)
	}
	if a.Name != name {
		t.Errorf("%s: Name %q", name, a.Name)
	}
	if a.Scaler == nil && a.Serverless == nil {
		t.Fatalf("%s: neither a VM scaler nor a serverless tier: serves nowhere", name)
	}
	if !reflect.DeepEqual(a.Initial, b.Initial) {
		t.Errorf("%s: initial fleets differ: %v, %v", name, a.Initial, b.Initial)
	}
	if a.Scaler != nil {
		fa, fb := newFleet(a.Initial, start), newFleet(b.Initial, start)
		for step := range ModelSteps {
			now := start.Add(time.Duration(step) * time.Minute)
			rate := 20 + 100*float64(step%30)/30 // a saw tooth, 20 to 120 rps
			da := a.Scaler.Scale(fa.snapshot(now, rate), now)
			db := b.Scaler.Scale(fb.snapshot(now, rate), now)
			if !reflect.DeepEqual(da, db) {
				t.Fatalf("%s: minute %d: two instances decided differently on the same facts:\n%+v\n%+v", name, step, da, db)
			}
			if err := fa.apply(da, now, &cat); err != nil {
				t.Fatalf("%s: minute %d: %v", name, step, err)
			}
			if err := fb.apply(db, now, &cat); err != nil {
				t.Fatalf("%s: minute %d: %v", name, step, err)
			}
		}
	}
	if a.Router != nil {
		now := start.Add(time.Hour)
		for _, v := range []policy.TierView{{}, {QueueLen: 50, Ready: 1, Slots: 9, MaxBatch: 8, BatchTime: 40 * time.Millisecond},
			{QueueLen: 2, Ready: 3, Slots: 27, FreeSlots: 20, MaxBatch: 8, BatchTime: 40 * time.Millisecond}} {
			r := policy.Request{Arrival: now, Deadline: now.Add(200 * time.Millisecond)}
			if ra, rb := a.Router.Route(r, v, now), b.Router.Route(r, v, now); ra != rb {
				t.Errorf("%s: routes differ for the same request and view %+v: %v, %v", name, v, ra, rb)
			}
		}
	}
}

// fleet is the conformance suite's VM fleet: launches are ready a minute later, terminations
// leave at once.
type fleet struct {
	members []autoscale.Member
	next    int
}

func newFleet(initial []provider.Spec, start time.Time) *fleet {
	f := &fleet{}
	for _, s := range initial {
		f.add(s, start, start)
	}
	return f
}

func (f *fleet) add(s provider.Spec, launched, ready time.Time) {
	f.members = append(f.members, autoscale.Member{ID: fmt.Sprintf("vm-%d", f.next), Type: s.Type, Tier: provider.TierVM,
		State: provider.StateLaunching, Launched: launched, Ready: ready, Slots: 9})
	f.next++
}

func (f *fleet) snapshot(now time.Time, rate float64) autoscale.Snapshot {
	for i := range f.members {
		if !now.Before(f.members[i].Ready) {
			f.members[i].State = provider.StateReady
		}
	}
	n := int(rate * 60)
	h := []autoscale.Sample{{Start: now.Add(-time.Minute), Period: time.Minute, Arrivals: n, Completed: n, Missed: n / 100,
		Concurrency: rate * 0.05, VMInFlight: rate * 0.04}}
	return autoscale.Snapshot{Fleet: append([]autoscale.Member(nil), f.members...), History: h}
}

func (f *fleet) apply(d autoscale.Decision, now time.Time, cat *cost.Catalog) error {
	for _, id := range d.Terminate {
		k := -1
		for i, m := range f.members {
			if m.ID == id {
				k = i
			}
		}
		if k < 0 {
			return fmt.Errorf("terminate %q: not a member of the fleet", id)
		}
		f.members = append(f.members[:k], f.members[k+1:]...)
	}
	for _, s := range d.Launch {
		if _, ok := cat.Type(s.Type); !ok && s.Tier == provider.TierVM {
			return fmt.Errorf("launch of %q: not an instance type of the catalog", s.Type)
		}
		f.add(s, now, now.Add(time.Minute))
	}
	return nil
}
