package cocktail

import (
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
)

func TestSize(t *testing.T) {
	t0 := time.Unix(1000, 0)
	m := ensemble.Model{Name: "m", Latency: 100 * time.Millisecond, PackingFactor: 4}
	types := []ensemble.InstanceType{{Name: "small", CostPerHour: 0.1, PackingFactor: 4}, {Name: "big", CostPerHour: 0.35, PackingFactor: 16}}
	s := Sizing{Scaling: ScaleWeighted, Slots: StaffedSlots(0), ReactiveStep: DefaultReactiveStep, IdleTimeout: 10 * time.Minute}
	idle := func(id string, slots int, since time.Duration) Instance {
		return Instance{ID: id, Slots: slots, Accepting: true, IdleSince: t0.Add(-since)}
	}
	for _, tc := range []struct {
		name   string
		p      Pool
		load   float64
		need   float64
		launch string
		count  int
		term   []string
	}{
		{"empty pool: 80 rps × 0.5 of 100 ms = 4 slots, one small", Pool{Model: m, Weight: 0.5, Types: types}, 80, 4, "small", 1, nil},
		{"covered: nothing", Pool{Model: m, Weight: 0.5, Types: types, Instances: []Instance{{ID: "a", Slots: 4, Accepting: true, IdleSince: t0}}}, 80, 4, "", 0, nil},
		{"a notified instance's slots do not count", Pool{Model: m, Weight: 0.5, Types: types, Instances: []Instance{{ID: "a", Slots: 4, Notified: true}}}, 80, 4, "small", 1, nil},
		{"late: a quarter more than it has", Pool{Model: m, Weight: 0.5, Late: true, Types: types, Instances: []Instance{idle("a", 4, 0), idle("b", 4, 0), idle("c", 4, 0), idle("d", 4, 0)}}, 80, 20, "small", 1, nil},
		{"idle past the timeout recycled while the rest covers", Pool{Model: m, Weight: 0.5, Types: types, Instances: []Instance{idle("a", 4, 11*time.Minute), idle("b", 4, 11*time.Minute), idle("c", 4, time.Minute)}}, 80, 4, "", 0, []string{"a", "b"}},
		{"idle but needed: kept", Pool{Model: m, Weight: 1, Types: types, Instances: []Instance{idle("a", 4, time.Hour), idle("b", 4, time.Hour)}}, 80, 8, "", 0, nil},
		{"static peak: replaces lost capacity only", Pool{Model: m, Static: 8, Types: types, Instances: []Instance{idle("a", 4, time.Hour)}}, 1000, 8, "small", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sz := s
			if tc.p.Static > 0 {
				sz.Scaling = ScaleStaticPeak
			}
			d, err := sz.Size(tc.p, tc.load, time.Second, t0)
			if err != nil {
				t.Fatal(err)
			}
			if d.Need != tc.need || d.Procurement.Type != tc.launch || d.Procurement.Count != tc.count || !slices.Equal(d.Terminate, tc.term) {
				t.Errorf("Size = need %v, launch %q × %d, terminate %v; want %v, %q × %d, %v", d.Need, d.Procurement.Type, d.Procurement.Count, d.Terminate, tc.need, tc.launch, tc.count, tc.term)
			}
		})
	}
	if _, err := s.Size(Pool{Model: m, Weight: 1}, 10, time.Second, t0); err == nil {
		t.Error("a pool with no instance type: want an error")
	}
}
