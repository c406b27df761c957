package dispatch

import (
	"errors"
	"slices"
	"testing"
)

func TestPicks(t *testing.T) {
	snap := []Instance{
		{ID: "a", Free: 0, Outstanding: 0, Weight: 10},
		{ID: "b", Free: 2, Outstanding: 3, Weight: 10},
		{ID: "c", Free: 1, Outstanding: 1, Weight: 1},
		{ID: "d", Free: 4, Outstanding: 1, Weight: 4},
	}
	tests := []struct {
		name string
		pick func([]Instance) int
		snap []Instance
		want int
	}{
		{"least outstanding skips full, prefers more free on ties", LeastOutstanding, snap, 3},
		{"least outstanding none free", LeastOutstanding, []Instance{{Free: 0}, {Free: -1}}, -1},
		{"least outstanding empty", LeastOutstanding, nil, -1},
		{"least outstanding first on full tie", LeastOutstanding, []Instance{{Free: 1}, {Free: 1}}, 0},
		// (3+1)/10 = 0.4, (1+1)/1 = 2, (1+1)/4 = 0.5.
		{"weighted by capacity", WeightedLeastOutstanding, snap, 1},
		{"weighted zero weight counts as 1", WeightedLeastOutstanding, []Instance{{Free: 1, Outstanding: 1}, {Free: 1, Outstanding: 0, Weight: 0.5}}, 0},
		{"weighted none free", WeightedLeastOutstanding, []Instance{{Free: 0, Weight: 9}}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pick(tt.snap); got != tt.want {
				t.Errorf("pick (-want +got): -%d +%d", tt.want, got)
			}
		})
	}
}

func TestRoundRobin(t *testing.T) {
	snap := []Instance{{ID: "a", Free: 1}, {ID: "b", Free: 0}, {ID: "c", Free: 1}, {ID: "d", Free: 1}}
	var rr RoundRobin
	var got []int
	for range 7 {
		got = append(got, rr.Pick(snap))
	}
	if want := []int{0, 2, 3, 0, 2, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("picks (-want +got):\n-%v\n+%v", want, got)
	}
	// The snapshot shrinks: the cursor wraps.
	if got := rr.Pick(snap[:1]); got != 0 {
		t.Errorf("pick after shrink (-want +got): -0 +%d", got)
	}
	if got := rr.Pick([]Instance{{Free: 0}}); got != -1 {
		t.Errorf("pick with none free (-want +got): -1 +%d", got)
	}
	if got := rr.Pick(nil); got != -1 {
		t.Errorf("pick on empty (-want +got): -1 +%d", got)
	}
}

func TestNew(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			p, err := New(name)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Pick([]Instance{{Free: 0}, {Free: 1}}); got != 1 {
				t.Errorf("Pick (-want +got): -1 +%d", got)
			}
		})
	}
	if _, err := New("random"); !errors.Is(err, ErrUnknownPicker) {
		t.Errorf("New(random) error (-want +got): -ErrUnknownPicker +%v", err)
	}
	custom := PickFunc(func(snap []Instance) int { return len(snap) - 1 })
	if got := custom.Pick(make([]Instance, 3)); got != 2 {
		t.Errorf("PickFunc adapter (-want +got): -2 +%d", got)
	}
}

func BenchmarkLeastOutstanding(b *testing.B) {
	snap := make([]Instance, 32)
	for i := range snap {
		snap[i] = Instance{Free: i % 3, Outstanding: (i * 7) % 5, Weight: float64(i%4 + 1)}
	}
	for b.Loop() {
		LeastOutstanding(snap)
	}
}
