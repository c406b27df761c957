package autoscale

import (
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

// upstream returns one-second samples: for each (n, v) pair, n samples of Upstream v, oldest first.
func upstream(pairs ...float64) []Sample {
	var h []Sample
	for i := 0; i+1 < len(pairs); i += 2 {
		for range int(pairs[i]) {
			h = append(h, Sample{Start: epoch.Add(time.Duration(len(h)) * time.Second), Period: time.Second, Upstream: pairs[i+1]})
		}
	}
	return h
}

// testKPAConfig is Knative's KPA with a 0.5 concurrency per pod aim (target 1 × 50 %), so that
// desired pods are exact: ⌈concurrency / 0.5⌉.
func testKPAConfig() KPAConfig {
	c := DefaultKPAConfig(provider.Spec{Type: "c5.large"})
	c.Utilization = 0.5
	c.Max = 100
	return c
}

// TestKPAPanic walks the KPA through a burst: the 6 s panic window sees 2 × the ready pods'
// worth of demand, panic mode scales to the panic-window demand, never scales down for a stable
// window (60 s from the last trigger), then leaves panic and shrinks by at most half per tick.
func TestKPAPanic(t *testing.T) {
	k, err := NewKPA(testKPAConfig())
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, k, []scaleStep{
		// Stable and panic averages 1.0: ⌈1.0/0.5⌉ = 2 pods = current.
		{name: "steady", now: 0, snap: Snapshot{Fleet: fleet(2, 0, 0), History: upstream(60, 1)},
			wantReason: ReasonSteady, wantNext: 2},
		{name: "between ticks", now: 1, snap: Snapshot{Fleet: fleet(2, 0, 0), History: upstream(60, 5)},
			wantReason: ReasonSteady, wantNext: 2},
		// Last 6 s at 3.0: panic demand ⌈3/0.5⌉ = 6 ≥ 2 × 2 ready → panic until 62 s; the stable
		// window (54 × 1 + 6 × 3)/60 = 1.2 would ask for only 3.
		{name: "burst enters panic", now: 2, snap: Snapshot{Fleet: fleet(2, 0, 0), History: upstream(54, 1, 6, 3)},
			wantLaunch: 4, wantReason: ReasonPanic, wantNext: 4},
		// In panic the KPA keeps its high-water mark though demand fell back.
		{name: "panic holds the high-water mark", now: 4, snap: Snapshot{Fleet: fleet(2, 0, 4), History: upstream(60, 1)},
			wantReason: ReasonPanic, wantNext: 6},
		{name: "no scale-down in panic", now: 40, snap: Snapshot{Fleet: fleet(6, 0, 0), History: upstream(60, 0.5)},
			wantReason: ReasonPanic, wantNext: 42},
		// 62 s: panic over. Stable demand ⌈0.5/0.5⌉ = 1, but one tick shrinks at most by
		// max-scale-down-rate 2: 6 → 3, newest first.
		{name: "leaves panic, halves", now: 62, snap: Snapshot{Fleet: fleet(6, 0, 0), History: upstream(60, 0.5)},
			wantTerm: []string{"r5", "r4", "r3"}, wantReason: ReasonScaleIn, wantNext: 64},
		{name: "halves again to 1", now: 64, snap: Snapshot{Fleet: fleet(3, 1, 0), History: upstream(60, 0.5)},
			wantTerm: []string{"r2", "r1"}, wantReason: ReasonScaleIn, wantNext: 66},
		{name: "at min", now: 66, snap: Snapshot{Fleet: fleet(1, 1, 0), History: upstream(60, 0)},
			wantReason: ReasonSteady, wantNext: 68},
	})
}

// TestKPAPanicExtends checks that a new trigger while in panic moves the exit a stable window on.
func TestKPAPanicExtends(t *testing.T) {
	k, err := NewKPA(testKPAConfig())
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, k, []scaleStep{
		{name: "enter panic", now: 0, snap: Snapshot{Fleet: fleet(1, 0, 0), History: upstream(54, 0.5, 6, 1)},
			wantLaunch: 1, wantReason: ReasonPanic, wantNext: 2},
		// 30 s: 2 ready, panic demand ⌈2/0.5⌉ = 4 ≥ 2 × 2: panic until 90 s.
		{name: "trigger again", now: 30, snap: Snapshot{Fleet: fleet(2, 0, 0), History: upstream(54, 0.5, 6, 2)},
			wantLaunch: 2, wantReason: ReasonPanic, wantNext: 32},
		{name: "still panic at 60 s", now: 60, snap: Snapshot{Fleet: fleet(4, 0, 0), History: upstream(60, 0.5)},
			wantReason: ReasonPanic, wantNext: 62},
		{name: "out at 90 s", now: 90, snap: Snapshot{Fleet: fleet(4, 0, 0), History: upstream(60, 0.5)},
			wantTerm: []string{"r3", "r2"}, wantReason: ReasonScaleIn, wantNext: 92},
	})
}

func TestKPAScaleOutBounds(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*KPAConfig)
		snap   Snapshot
		launch int
		reason string
	}{
		// Stable 1.5 → 3 pods; panic demand 3 < 2 × 2 ready: an ordinary scale-out.
		{"stable scale-out", nil, Snapshot{Fleet: fleet(2, 0, 0), History: upstream(60, 1.5)}, 1, ReasonScaleOut},
		// Launching pods count as current: 3 wanted, 2 ready + 1 launching.
		{"launching counts", nil, Snapshot{Fleet: fleet(2, 0, 1), History: upstream(60, 1.5)}, 0, ReasonSteady},
		// Demand 8 pods from 1: max-scale-up-rate 2 allows ⌈1 × 2⌉ = 2.
		{"scale-up rate", func(c *KPAConfig) { c.MaxScaleUpRate = 2 }, Snapshot{Fleet: fleet(1, 0, 0), History: upstream(60, 4)}, 1, ReasonPanic},
		{"max pods", func(c *KPAConfig) { c.Max = 3 }, Snapshot{Fleet: fleet(1, 0, 0), History: upstream(60, 4)}, 2, ReasonPanic},
		// Default 70 %: 0.7 concurrency per pod; ⌈1.75/0.7⌉ = ⌈2.5⌉ = 3.
		{"default utilization", func(c *KPAConfig) { c.Utilization = DefaultKPAUtilization }, Snapshot{Fleet: fleet(2, 0, 0), History: upstream(60, 1.75)}, 1, ReasonScaleOut},
		{"min replaces", func(c *KPAConfig) { c.Min = 2 }, Snapshot{Fleet: nil, History: upstream(60, 0)}, 2, ReasonScaleOut},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testKPAConfig()
			if c.mutate != nil {
				c.mutate(&cfg)
			}
			k, err := NewKPA(cfg)
			if err != nil {
				t.Fatal(err)
			}
			d := k.Scale(c.snap, at(0))
			if len(d.Launch) != c.launch || d.Reason != c.reason || len(d.Terminate) != 0 {
				t.Errorf("Scale (-want +got):\n-launch %d reason %q\n+launch %d reason %q terminate %v", c.launch, c.reason, len(d.Launch), d.Reason, d.Terminate)
			}
		})
	}
}

func TestKPAValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*KPAConfig)
		want   string
	}{
		{"target", func(c *KPAConfig) { c.Target = 0 }, "target: must be > 0, got 0"},
		{"utilization", func(c *KPAConfig) { c.Utilization = 1.5 }, "utilization: must be in (0, 1], got 1.5"},
		{"windows", func(c *KPAConfig) { c.PanicWindow = 2 * time.Minute }, "windows: need 0 < panic_window ≤ stable_window, got 2m0s and 1m0s"},
		{"panic threshold", func(c *KPAConfig) { c.PanicThreshold = 0.5 }, "panic_threshold: must be ≥ 1, got 0.5"},
		{"rates", func(c *KPAConfig) { c.MaxScaleDownRate = 1 }, "max_scale_up_rate/max_scale_down_rate: must be > 1, got 1000 and 1"},
		{"min/max", func(c *KPAConfig) { c.Max = 0 }, "min/max: need 0 ≤ min ≤ max and max ≥ 1, got 1 and 0"},
		{"tick", func(c *KPAConfig) { c.Tick = 0 }, "tick: must be > 0, got 0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultKPAConfig(provider.Spec{Type: "c5.large"})
			c.mutate(&cfg)
			_, err := NewKPA(cfg)
			if err == nil || err.Error() != "kpa: "+c.want {
				t.Errorf("NewKPA error (-want +got):\n-kpa: %s\n+%v", c.want, err)
			}
		})
	}
}
