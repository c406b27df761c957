package slomon

import (
	"strings"
	"testing"
	"time"
)

func TestMonitorDecide(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Window: 10, Target: 0.9, Launch: 2, Type: "c5.large", CoolDown: time.Minute}
	type step struct {
		at         time.Duration
		outcomes   string // '.' met, 'x' missed
		wantLaunch int
		wantReason string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"warming up never launches", []step{{0, "xxxxx", 0, ReasonWarmingUp}}},
		{"one miss in ten meets 0.9", []step{{0, ".........x", 0, ReasonMet}}},
		{"two misses in ten launch L of T", []step{{0, "........xx", 2, ReasonViolated}}},
		{"window is cleared after a launch", []step{{0, "xxxxxxxxxx", 2, ReasonViolated}, {time.Second, "xxxx", 0, ReasonWarmingUp}}},
		{"cool-down holds the next launch", []step{
			{0, "xxxxxxxxxx", 2, ReasonViolated},
			{30 * time.Second, "xxxxxxxxxx", 0, ReasonCoolDown},
			{61 * time.Second, "", 2, ReasonViolated},
		}},
		{"old misses slide out of the window", []step{{0, "xxxxx", 0, ReasonWarmingUp}, {time.Second, "..........", 0, ReasonMet}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				for _, c := range s.outcomes {
					m.Observe(c == '.')
				}
				d := m.Decide(t0.Add(s.at))
				if d.Launch != s.wantLaunch || d.Reason != s.wantReason {
					t.Errorf("step %d: Decide (-want +got):\n-launch %d %q\n+launch %d %q", i, s.wantLaunch, s.wantReason, d.Launch, d.Reason)
				}
				if d.Launch > 0 && d.Type != cfg.Type {
					t.Errorf("step %d: Type = %q, want %q", i, d.Type, cfg.Type)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*Config)
		want string
	}{
		{"window", func(c *Config) { c.Window = 0 }, "slo_monitor.window"},
		{"target", func(c *Config) { c.Target = 1.5 }, "slo_monitor.target"},
		{"launch", func(c *Config) { c.Launch = 0 }, "slo_monitor.launch"},
		{"type", func(c *Config) { c.Type = "" }, "slo_monitor.type"},
		{"cool-down", func(c *Config) { c.CoolDown = -1 }, "slo_monitor.cool_down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig invalid: %v", err)
	}
}

// TestMonitorReset: Reset forgets the window (the next decision waits for M new requests) and
// keeps the cool-down.
func TestMonitorReset(t *testing.T) {
	c := DefaultConfig()
	c.Window = 4
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 25, 0, 0, 0, 0, time.UTC)
	for range 4 {
		m.Observe(false)
	}
	if d := m.Decide(now); d.Launch != 1 {
		t.Fatalf("Decide = %+v, want a launch", d)
	}
	for range 4 {
		m.Observe(false)
	}
	m.Reset()
	if d := m.Decide(now.Add(time.Minute)); d.Reason != ReasonWarmingUp || m.Attainment() != 1 {
		t.Errorf("after Reset: %+v attainment %v, want warming up with nothing judged", d, m.Attainment())
	}
	for range 4 {
		m.Observe(false)
	}
	if d := m.Decide(now.Add(2 * time.Minute)); d.Reason != ReasonCoolDown {
		t.Errorf("after Reset, violation at 2 min: %q, want %q (the cool-down is kept)", d.Reason, ReasonCoolDown)
	}
}
