package planner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
)

func TestOnInterruption(t *testing.T) {
	types := []InstanceType{{Name: "c5.large-spot", Capacity: 5, Spot: true, Feasible: true}, {Name: "t2.medium", Capacity: 4}}
	standbys := []Standby{{ID: "s1", Type: "t2.medium", Capacity: 4}, {ID: "s2", Type: "t2.medium", Capacity: 4}, {ID: "s3", Type: "t2.medium", Capacity: 4}}
	cfg := DefaultSpotConfig()
	tests := []struct {
		name        string
		interrupted []Running
		standbys    []Standby
		wantResume  []string
		wantPrewarm int
		wantReplan  bool
	}{
		{"nothing interrupted", nil, standbys, nil, 0, false},
		{"one instance needs two standbys", []Running{{ID: "a", Type: "c5.large-spot"}}, standbys, []string{"s1", "s2"}, 2, true},
		{"more lost than standbys", []Running{{ID: "a", Type: "c5.large-spot"}, {ID: "b", Type: "c5.large-spot"}, {ID: "c", Type: "c5.large-spot"}}, standbys, []string{"s1", "s2", "s3"}, 6, true},
		{"no standbys still pre-warms and replans", []Running{{ID: "a", Type: "c5.large-spot"}}, nil, nil, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := OnInterruption(tc.interrupted, types, tc.standbys, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Resume, tc.wantResume) || d.Prewarm != tc.wantPrewarm || d.Replan != tc.wantReplan {
				t.Errorf("OnInterruption (-want +got):\n-resume %v prewarm %d replan %v\n+resume %v prewarm %d replan %v",
					tc.wantResume, tc.wantPrewarm, tc.wantReplan, d.Resume, d.Prewarm, d.Replan)
			}
		})
	}
	if _, err := OnInterruption(nil, types, nil, SpotConfig{}); err == nil || !strings.Contains(err.Error(), "spot.serverless_latency") {
		t.Errorf("zero config: error = %v, want one naming spot.serverless_latency", err)
	}
}

func TestExpectedSpillAndPrewarm(t *testing.T) {
	f := Forecast{Start: t0, Step: time.Minute, Rates: []float64{10, 30, 50}}
	tests := []struct {
		name  string
		at    time.Duration
		ready float64
		want  float64
	}{
		{"covered", 0, 20, 0},
		{"surge beyond ready capacity", time.Minute, 20, 10},
		{"after the forecast uses its last step", time.Hour, 20, 30},
		{"before the forecast uses its first step", -time.Hour, 0, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExpectedSpill(f, tc.ready, t0.Add(tc.at)); got != tc.want {
				t.Errorf("ExpectedSpill (-want +got):\n-%v\n+%v", tc.want, got)
			}
		})
	}
	if got := PrewarmFor(10, DefaultSpotConfig()); got != 4 {
		t.Errorf("PrewarmFor(10 req/s × 0.4 s) = %d, want 4", got)
	}
}

func TestTune(t *testing.T) {
	curve, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	fake := func(c profile.Curve, rt time.Duration, mb int) (int, time.Duration, float64) {
		if c.ServiceTime(1) > rt {
			return 0, 0, 0
		}
		return 1, 0, 1 / c.ServiceTime(1).Seconds()
	}
	got := Tune(InstanceType{Name: "x"}, curve, 200*time.Millisecond, 0, fake)
	if !got.Feasible || got.Capacity != 10 || got.MaxBatch != 1 {
		t.Errorf("Tune feasible: got %+v, want feasible, capacity 10, batch 1", got)
	}
	got = Tune(InstanceType{Name: "x"}, curve, 50*time.Millisecond, 0, fake)
	if got.Feasible {
		t.Errorf("Tune with RT_max below T_1: got feasible %+v", got)
	}
}
