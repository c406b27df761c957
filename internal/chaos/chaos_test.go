package chaos

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

func ready(id, model string) provider.Instance {
	return provider.Instance{ID: id, State: provider.StateReady, Spec: provider.Spec{Model: model}}
}

func TestChoose(t *testing.T) {
	insts := []provider.Instance{ready("a1", "a"), ready("a2", "a"), ready("b1", "b"),
		{ID: "a3", State: provider.StateLaunching, Spec: provider.Spec{Model: "a"}}}
	for _, c := range []struct {
		name       string
		busy       map[string]bool
		model      string
		minHealthy int
		allowed    []string
	}{
		{"keeps one healthy per model", nil, "", 1, []string{"a1", "a2"}},
		{"no min: any ready", nil, "", 0, []string{"a1", "a2", "b1"}},
		{"busy instances are skipped", map[string]bool{"a1": true}, "", 0, []string{"a2", "b1"}},
		{"busy counts against healthy", map[string]bool{"a1": true}, "", 1, nil},
		{"one model only", nil, "b", 0, []string{"b1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			seen := map[string]bool{}
			for range 200 {
				ch := Choose(rng, insts, c.busy, []Kind{Hang}, c.model, c.minHealthy)
				if ch.Instance == "" {
					if len(c.allowed) != 0 {
						t.Fatalf("no victim, want one of %v (%s)", c.allowed, ch.Reason)
					}
					continue
				}
				if ch.Kind != Hang {
					t.Errorf("kind (-want +got): -hang +%s", ch.Kind)
				}
				seen[ch.Instance] = true
			}
			for _, id := range c.allowed {
				if !seen[id] {
					t.Errorf("instance %s never chosen in 200 draws", id)
				}
			}
			if len(seen) != len(c.allowed) {
				t.Errorf("chosen (-want +got): -%v +%v", c.allowed, seen)
			}
		})
	}
}

// procTarget is one real process (`sleep`) in its own process group, as the local provider
// starts workers.
type procTarget struct{ cmd *exec.Cmd }

func (p procTarget) Instances(ctx context.Context) ([]provider.Instance, error) {
	return []provider.Instance{ready("w1", "m")}, nil
}

func (p procTarget) PID(id string) (int, bool) { return p.cmd.Process.Pid, true }

func startSleep(t *testing.T) (procTarget, chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run sleep: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return procTarget{cmd}, done
}

// state returns the process state letter from /proc (R, S, T, ...).
func state(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return s[i+2 : i+3]
}

func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for state(t, pid) != want {
		if time.Now().After(deadline) {
			t.Fatalf("process state (-want +got): -%s +%s", want, state(t, pid))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStepInjectsRealFaults(t *testing.T) {
	t.Run("kill", func(t *testing.T) {
		pt, done := startSleep(t)
		m, err := New(pt, Config{Every: time.Second, Kinds: []Kind{Kill}, HangFor: time.Second, SlowFor: time.Second, SlowPeriod: time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := m.Step(context.Background(), time.Now())
		if err != nil || ev.Kind != Kill || ev.PID != pt.cmd.Process.Pid {
			t.Fatalf("Step = %+v, %v; want a kill of pid %d", ev, err, pt.cmd.Process.Pid)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("killed process still runs")
		}
	})
	t.Run("hang then continue", func(t *testing.T) {
		pt, _ := startSleep(t)
		m, err := New(pt, Config{Every: time.Second, Kinds: []Kind{Hang}, HangFor: 100 * time.Millisecond, SlowFor: time.Second, SlowPeriod: time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Step(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
		pid := pt.cmd.Process.Pid
		waitState(t, pid, "T")
		if _, err := m.Step(context.Background(), time.Now()); err != ErrNoVictim {
			t.Errorf("second Step while hung: %v, want ErrNoVictim", err)
		}
		waitState(t, pid, "S")
		m.Stop()
		if got := m.Counts()[Hang]; got != 1 {
			t.Errorf("hang count (-want +got): -1 +%d", got)
		}
	})
	t.Run("Stop continues a slow process", func(t *testing.T) {
		pt, _ := startSleep(t)
		m, err := New(pt, Config{Every: time.Second, Kinds: []Kind{Slow}, HangFor: time.Second, SlowFor: time.Hour, SlowDuty: 0.9, SlowPeriod: 20 * time.Millisecond}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Step(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
		waitState(t, pt.cmd.Process.Pid, "T")
		m.Stop()
		waitState(t, pt.cmd.Process.Pid, "S")
	})
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"every", func(c *Config) { c.Every = 0 }, "chaos.every"},
		{"duty", func(c *Config) { c.SlowDuty = 1 }, "chaos.slow_duty"},
		{"kind", func(c *Config) { c.Kinds = []Kind{"melt"} }, "chaos.kinds"},
		{"min healthy", func(c *Config) { c.MinHealthy = -1 }, "chaos.min_healthy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.mod(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, c.want)
			}
		})
	}
}
