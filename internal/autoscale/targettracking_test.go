package autoscale

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

// fleet returns ready members r0…r(ready−1) (busy ones first: r0…r(busy−1)), then launching
// members l0…l(launching−1), all of type "c5.large" with one slot, in launch order.
func fleet(ready, busy, launching int) []Member {
	var f []Member
	for i := range ready {
		m := Member{ID: fmt.Sprintf("r%d", i), Type: "c5.large", State: provider.StateReady, Slots: 1}
		if i < busy {
			m.Busy = 1
		}
		f = append(f, m)
	}
	for i := range launching {
		f = append(f, Member{ID: fmt.Sprintf("l%d", i), Type: "c5.large", State: provider.StateLaunching, Slots: 1})
	}
	return f
}

// minute is a history of one complete one-minute sample with the given arrivals.
func minute(arrivals int) []Sample {
	return []Sample{{Start: epoch, Period: time.Minute, Arrivals: arrivals}}
}

type scaleStep struct {
	name       string
	now        int // seconds
	snap       Snapshot
	wantLaunch int
	wantTerm   []string
	wantReason string
	wantNext   int // seconds
}

func runSteps(t *testing.T, s Scaler, steps []scaleStep) {
	t.Helper()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			d := s.Scale(st.snap, at(st.now))
			if len(d.Launch) != st.wantLaunch || !slices.Equal(d.Terminate, st.wantTerm) || d.Reason != st.wantReason || !d.Next.Equal(at(st.wantNext)) {
				t.Errorf("Scale at %ds (-want +got):\n-launch %d terminate %v reason %q next %ds\n+launch %d terminate %v reason %q next %v",
					st.now, st.wantLaunch, st.wantTerm, st.wantReason, st.wantNext,
					len(d.Launch), d.Terminate, d.Reason, d.Next.Sub(epoch))
			}
			for _, sp := range d.Launch {
				if sp.Type != "c5.large" {
					t.Errorf("launched %q, want c5.large", sp.Type)
				}
			}
		})
	}
}

// TestTargetTrackingScaleOut walks AWS target tracking through the high alarm (3 datapoints
// above target) and the 300 s scale-out cool-down. Target: 60 invocations per instance-minute.
func TestTargetTrackingScaleOut(t *testing.T) {
	cfg := DefaultTargetTrackingConfig(provider.Spec{Type: "c5.large"}, 60)
	cfg.Max = 10
	tt, err := NewTargetTracking(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, tt, []scaleStep{
		{name: "first call starts the period", now: 0, snap: Snapshot{Fleet: fleet(2, 0, 0)},
			wantReason: ReasonNoMetrics, wantNext: 60},
		{name: "inside the period", now: 30, snap: Snapshot{Fleet: fleet(2, 0, 0), History: minute(240)},
			wantReason: ReasonSteady, wantNext: 60},
		// 240 / 2 ready = 120 > 60: datapoint 1 of 3.
		{name: "above target, 1 of 3", now: 60, snap: Snapshot{Fleet: fleet(2, 0, 0), History: minute(240)},
			wantReason: ReasonSteady, wantNext: 120},
		{name: "above target, 2 of 3", now: 120, snap: Snapshot{Fleet: fleet(2, 0, 0), History: minute(240)},
			wantReason: ReasonSteady, wantNext: 180},
		// Third datapoint: desired = ⌈2 × 120 / 60⌉ = 4, launch 2.
		{name: "alarm: scale out to 4", now: 180, snap: Snapshot{Fleet: fleet(2, 0, 0), History: minute(240)},
			wantLaunch: 2, wantReason: ReasonScaleOut, wantNext: 240},
		// The alarm restarts its count; load doubles: 480 / 2 ready = 240.
		{name: "after scale-out, 1 of 3", now: 240, snap: Snapshot{Fleet: fleet(2, 0, 2), History: minute(480)},
			wantReason: ReasonSteady, wantNext: 300},
		{name: "after scale-out, 2 of 3", now: 300, snap: Snapshot{Fleet: fleet(2, 0, 2), History: minute(480)},
			wantReason: ReasonSteady, wantNext: 360},
		// Alarm again at 360 s, but only 180 s after the last scale-out.
		{name: "cool-down at 180 s", now: 360, snap: Snapshot{Fleet: fleet(4, 0, 0), History: minute(960)},
			wantReason: ReasonCooldown, wantNext: 420},
		{name: "cool-down at 299 s", now: 479, snap: Snapshot{Fleet: fleet(4, 0, 0), History: minute(960)},
			wantReason: ReasonCooldown, wantNext: 539},
		// 300 s after the scale-out: desired = ⌈4 × 240 / 60⌉ = 16, clamped to Max 10: launch 6.
		{name: "cool-down over, clamped to max", now: 539, snap: Snapshot{Fleet: fleet(4, 0, 0), History: minute(960)},
			wantLaunch: 6, wantReason: ReasonScaleOut, wantNext: 599},
	})
}

// TestTargetTrackingScaleIn covers the low alarm (below 90 % of target for ScaleInDatapoints
// periods), the scale-in cool-down after any scaling, the dead band between 90 % and 100 %,
// and the order of terminations (launching, then idle newest, then busy).
func TestTargetTrackingScaleIn(t *testing.T) {
	cfg := DefaultTargetTrackingConfig(provider.Spec{Type: "c5.large"}, 60)
	cfg.ScaleInDatapoints = 2
	cfg.ScaleOutDatapoints = 1
	tt, err := NewTargetTracking(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, tt, []scaleStep{
		{name: "start", now: 0, snap: Snapshot{Fleet: fleet(4, 0, 0)}, wantReason: ReasonNoMetrics, wantNext: 60},
		// 300 / 4 = 75 > 60 with a 1-datapoint alarm: ⌈4 × 75 / 60⌉ = 5.
		{name: "scale out to 5", now: 60, snap: Snapshot{Fleet: fleet(4, 0, 0), History: minute(300)},
			wantLaunch: 1, wantReason: ReasonScaleOut, wantNext: 120},
		// 54 per instance is exactly 90 % of the target: in the dead band, no datapoint counts.
		{name: "at 90 %: dead band", now: 120, snap: Snapshot{Fleet: fleet(5, 0, 0), History: minute(270)},
			wantReason: ReasonSteady, wantNext: 180},
		// 25 per instance < 54: low datapoints 1 and 2; the second is within 300 s of the scale-out.
		{name: "low, 1 of 2", now: 180, snap: Snapshot{Fleet: fleet(5, 0, 0), History: minute(125)},
			wantReason: ReasonSteady, wantNext: 240},
		{name: "low alarm in cool-down", now: 240, snap: Snapshot{Fleet: fleet(5, 0, 0), History: minute(125)},
			wantReason: ReasonCooldown, wantNext: 300},
		{name: "low, still cooling down at 299 s", now: 359, snap: Snapshot{Fleet: fleet(5, 0, 0), History: minute(125)},
			wantReason: ReasonCooldown, wantNext: 419},
		// 360 s after the scale-out: ⌈5 × 25 / 60⌉ = 3; r0 and r1 busy, so the idle newest go:
		// r4 then r3.
		{name: "scale in to 3, idle newest first", now: 419, snap: Snapshot{Fleet: fleet(5, 2, 0), History: minute(125)},
			wantTerm: []string{"r4", "r3"}, wantReason: ReasonScaleIn, wantNext: 479},
		// The count restarted: one low datapoint is not enough.
		{name: "after scale-in, 1 of 2", now: 479, snap: Snapshot{Fleet: fleet(3, 0, 0), History: minute(30)},
			wantReason: ReasonSteady, wantNext: 539},
		{name: "scale-in cool-down", now: 539, snap: Snapshot{Fleet: fleet(3, 0, 0), History: minute(30)},
			wantReason: ReasonCooldown, wantNext: 599},
		// 10 per instance: ⌈2 × 10/60⌉ = 1; a launching instance goes first, then the newest idle one.
		{name: "scale in takes launching first", now: 779, snap: Snapshot{Fleet: fleet(2, 1, 1), History: minute(20)},
			wantTerm: []string{"l0", "r1"}, wantReason: ReasonScaleIn, wantNext: 839},
		// Below Min (an instance was interrupted): replaced at once, the period clock untouched.
		{name: "below min: replace", now: 800, snap: Snapshot{Fleet: nil}, wantLaunch: 1, wantReason: ReasonReplace, wantNext: 839},
	})
}

func TestTargetTrackingValidate(t *testing.T) {
	base := DefaultTargetTrackingConfig(provider.Spec{Type: "c5.large"}, 60)
	cases := []struct {
		name   string
		mutate func(*TargetTrackingConfig)
		want   string
	}{
		{"target", func(c *TargetTrackingConfig) { c.TargetPerInstance = 0 }, "target_per_instance: must be > 0, got 0"},
		{"max below min", func(c *TargetTrackingConfig) { c.Min, c.Max = 3, 2 }, "min/max: need 0 ≤ min ≤ max and max ≥ 1, got 3 and 2"},
		{"period", func(c *TargetTrackingConfig) { c.Period = 0 }, "period: must be > 0, got 0s"},
		{"cool-down", func(c *TargetTrackingConfig) { c.ScaleInCooldown = -time.Second }, "cool-downs: must be ≥ 0, got 5m0s and -1s"},
		{"datapoints", func(c *TargetTrackingConfig) { c.ScaleOutDatapoints = 0 }, "datapoints: must be ≥ 1, got 0 and 15"},
		{"ratio", func(c *TargetTrackingConfig) { c.ScaleInRatio = 1.5 }, "scale_in_ratio: must be in (0, 1], got 1.5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := base
			c.mutate(&cfg)
			_, err := NewTargetTracking(cfg)
			if err == nil || err.Error() != "target tracking: "+c.want {
				t.Errorf("NewTargetTracking error (-want +got):\n-target tracking: %s\n+%v", c.want, err)
			}
		})
	}
}
