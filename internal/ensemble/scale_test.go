package ensemble

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"
)

func TestPopularityWeights(t *testing.T) {
	p := NewPopularity(5 * time.Minute)
	p.Record(t0, []string{"a", "b"})
	p.Record(t0.Add(time.Minute), []string{"a"})
	p.Record(t0.Add(2*time.Minute), []string{"a", "c"})
	p.Record(t0.Add(2*time.Minute), []string{"a", "b"})
	tests := []struct {
		name string
		at   time.Duration
		want map[string]float64
	}{
		{"all four requests in the window", 3 * time.Minute, map[string]float64{"a": 1, "b": 0.5, "c": 0.25}},
		{"the first request has aged out", 5*time.Minute + 30*time.Second, map[string]float64{"a": 1, "b": 1.0 / 3, "c": 1.0 / 3}},
		{"everything aged out", 10 * time.Minute, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := p.Weights(t0.Add(tt.at))
			if len(got) != len(tt.want) {
				t.Fatalf("weights (-want +got):\n-%v\n+%v", tt.want, got)
			}
			for m, w := range tt.want {
				if math.Abs(got[m]-w) > 1e-12 {
					t.Errorf("weights (-want +got):\n-%v\n+%v", tt.want, got)
				}
			}
		})
	}
}

func TestWeightedScale(t *testing.T) {
	w := map[string]float64{"a": 1, "b": 0.5}
	capa := map[string]float64{"a": 10, "b": 4}
	got, err := WeightedScale(70, 40, w, capa)
	if err != nil {
		t.Fatal(err)
	}
	want := []PoolScale{{Model: "a", Weight: 1, Load: 30, Instances: 3}, {Model: "b", Weight: 0.5, Load: 15, Instances: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WeightedScale (-want +got):\n-%+v\n+%+v", want, got)
	}
	if got, _ := WeightedScale(30, 40, w, capa); got != nil {
		t.Errorf("scale-down produced launches: %+v", got)
	}
	if _, err := WeightedScale(70, 40, w, map[string]float64{"a": 1}); err == nil {
		t.Error("accepted a pool without capacity")
	}
	if _, err := WeightedScale(math.NaN(), 40, w, capa); err == nil {
		t.Error("accepted a NaN load")
	}
}

func TestProcure(t *testing.T) {
	types := []InstanceType{
		{Name: "c5.xlarge", CostPerHour: 0.17, PackingFactor: 3},
		{Name: "c5.4xlarge", CostPerHour: 0.68, PackingFactor: 12},
		{Name: "p2.xlarge", CostPerHour: 0.90, PackingFactor: 40},
	}
	tests := []struct {
		name      string
		predicted float64
		running   []float64
		wantType  string
		wantCount int
	}{
		{"running instances cover the load", 5, []float64{3, 3}, "", 0},
		{"small gap: one small CPU instance", 8, []float64{3, 3}, "c5.xlarge", 1},
		{"medium gap: small instances tie the big one, first listed wins", 12, nil, "c5.xlarge", 4},
		{"gap matching the GPU's packing factor: GPU", 40, nil, "p2.xlarge", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Procure(tt.predicted, tt.running, types)
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != tt.wantType || got.Count != tt.wantCount {
				t.Errorf("Procure (-want +got):\n-%s x%d\n+%s x%d (%s)", tt.wantType, tt.wantCount, got.Type, got.Count, got.Reason)
			}
		})
	}
	if _, err := Procure(10, nil, nil); !errors.Is(err, ErrNoInstanceType) {
		t.Errorf("no types: err (-want +got):\n-%v\n+%v", ErrNoInstanceType, err)
	}
	if _, err := Procure(-1, nil, types); err == nil {
		t.Error("accepted a negative load")
	}
}

func TestLeastFreeSlot(t *testing.T) {
	tests := []struct {
		name string
		free []int
		want int
	}{
		{"no instances", nil, -1},
		{"all full", []int{0, 0}, -1},
		{"fullest instance with room", []int{5, 1, 3, 0}, 1},
		{"ties go to the lowest index", []int{4, 2, 2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LeastFreeSlot(tt.free); got != tt.want {
				t.Errorf("LeastFreeSlot(%v) (-want +got):\n-%d\n+%d", tt.free, tt.want, got)
			}
		})
	}
}
