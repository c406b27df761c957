// Package livesim checks the design's keystone end to end: one policy, built through the one
// registry, decides the same whether the simulator or the live controller drives it.
package livesim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/trace"
	_ "github.com/sloserve/sloserve/test/livesim/example" // a policy added as one package
)

// call is one Scale call: what the policy saw and what it decided.
type call struct {
	snap autoscale.Snapshot
	now  time.Time
	d    autoscale.Decision
}

// recorder wraps a scaler and records every call.
type recorder struct {
	inner autoscale.Scaler
	calls []call
}

func (r *recorder) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	d := r.inner.Scale(s, now)
	r.calls = append(r.calls, call{snap: autoscale.Snapshot{Fleet: slices.Clone(s.Fleet), History: slices.Clone(s.History), QueueLen: s.QueueLen},
		now: now, d: autoscale.Decision{Launch: slices.Clone(d.Launch), Terminate: slices.Clone(d.Terminate), Reason: d.Reason}})
	return d
}

// phase is a Poisson rate (requests/s; 0 is silence) for a duration.
type phase struct {
	rps float64
	dur time.Duration
}

// phases is Poisson arrivals through the phases, in order (seeded: deterministic).
func phases(ps []phase) sim.Arrivals {
	var out []time.Duration
	var off time.Duration
	for i, p := range ps {
		if p.rps > 0 {
			src := trace.Poisson(p.rps, uint64(i+1))
			for {
				at, ok := src.Next()
				if !ok || at >= p.dur {
					break
				}
				out = append(out, off+at)
			}
		}
		off += p.dur
	}
	i := 0
	return trace.SourceFunc(func() (time.Duration, bool) {
		if i == len(out) {
			return 0, false
		}
		i++
		return out[i-1], true
	})
}

// replay is the live controller's world made of the simulator's facts: the provider lists the
// fleet the simulator showed the policy, the reader returns the counters whose differences are
// the simulator's samples, and both record what the controller does.
type replay struct {
	mu         sync.Mutex // the controller drains and terminates in goroutines of its own
	fleet      []provider.Instance
	reading    controller.Reading
	launched   []provider.Spec
	terminated []string
}

func (r *replay) Launch(_ context.Context, s provider.Spec) (provider.Instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.launched = append(r.launched, s)
	return provider.Instance{ID: fmt.Sprintf("live-%d", len(r.launched)), Spec: s, State: provider.StateLaunching}, nil
}
func (r *replay) Terminate(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated = append(r.terminated, id)
	return nil
}
func (r *replay) Instances(context.Context) ([]provider.Instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.fleet), nil
}
func (r *replay) Sync(context.Context, []provider.Instance) error      { return nil }
func (r *replay) RemoveInstance(context.Context, string, string) error { return nil }
func (r *replay) read(string) (controller.Reading, error)              { return r.reading, nil }
func (r *replay) show(s autoscale.Snapshot, model string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fleet = r.fleet[:0]
	for _, m := range s.Fleet {
		r.fleet = append(r.fleet, provider.Instance{ID: m.ID, Spec: provider.Spec{Model: model, Type: m.Type, Tier: m.Tier},
			State: m.State, Launched: m.Launched, Ready: m.Ready})
	}
	r.reading.Queued = int64(s.QueueLen)
}

// TestPolicyLiveEqualsSimulated drives one sloserve policy — built the way `sloserve serve`
// builds it (controller.NewModel: the live world, the live preset, the config's policies
// section) — through the simulator on a load with a burst, recording every Scale call; then
// builds it again through the live controller's construction path and drives the live
// controller (Step) with a provider and counters that show the same facts. Every decision must
// be the same: the same launches and terminations with the same reasons, call by call.
func TestPolicyLiveEqualsSimulated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy string
		min    int
		extra  string // the config's policies section for the policy
	}{
		{"sloserve", "sloserve", 1, ""},
		{"sloserve scale to zero", "sloserve", 0, ""},
		{"sloserve with options", "sloserve", 1, "{mark: {headroom: 1.3, forecaster: holt-winters}}"},
		{"mark", "mark", 1, ""},
		{"example policy (one package, test/livesim/example)", "example", 1, "{high: 0.7}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Controller.Policy, cfg.Controller.MinInstances, cfg.Controller.MaxInstances = tc.policy, tc.min, 1000
			if tc.extra != "" {
				cfg.Policies = policy.Sections{}
				if err := cfg.Policies.Set(tc.policy, tc.extra); err != nil {
					t.Fatal(err)
				}
			}
			m := config.DefaultModel("m")
			m.InstanceType.RPS, m.InstanceType.LaunchDelay = 50, 2*time.Second
			curve, err := controller.LocalCurve(m.InstanceType.RPS, m.Slots, m.InstanceType.MaxBatch)
			if err != nil {
				t.Fatal(err)
			}
			start := sim.DefaultEpoch

			// The simulator, on the live world's facts and clock.
			env := controller.LiveEnv(cfg, m, curve, start)
			_, name, _ := config.PolicyName(tc.policy)
			pol, err := policy.NewModel(name, env)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{inner: pol.Scaler}
			pol.Scaler = rec
			sc := sim.DefaultConfig()
			sc.SLO, sc.SamplePeriod, sc.Epoch = m.SLO.Spec(), cfg.Controller.SampleInterval, start
			// 40 req/s, a burst at 200 req/s, quiet, then 40 req/s again.
			src := phases([]phase{{40, time.Minute}, {200, time.Minute}, {0, 2 * time.Minute}, {40, time.Minute}})
			if _, err := sim.Run(context.Background(), sc, env.Catalog, env.Model, pol, src); err != nil {
				t.Fatal(err)
			}
			if len(rec.calls) < 100 {
				t.Fatalf("the simulator asked the policy %d times, want ≥ 100", len(rec.calls))
			}

			// The live controller, built the way `serve` builds it, on the same facts.
			cm, err := controller.NewModel(cfg, m, curve, start)
			if err != nil {
				t.Fatal(err)
			}
			live := &recorder{inner: cm.Scaler}
			cm.Scaler = live
			rp := &replay{}
			c, err := controller.New(rp, rp, rp.read, []controller.Model{cm}, controller.Options{Period: cfg.Controller.SampleInterval})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// The simulator asks first at the start, with no history; so does the live
			// controller's first Step (it takes the counters' baseline).
			if len(rec.calls[0].snap.History) != 0 {
				t.Fatalf("the simulator's first call has %d samples, want none", len(rec.calls[0].snap.History))
			}
			launches, terms := 0, 0
			for i, sc := range rec.calls {
				if h := sc.snap.History; len(h) > 0 {
					s := h[len(h)-1]
					if sc.now.Equal(s.Start.Add(s.Period)) && (i == 0 || !rec.calls[i-1].now.Equal(sc.now)) {
						rp.mu.Lock()
						rp.reading.Arrivals += int64(s.Arrivals)
						rp.reading.Completed += int64(s.Completed)
						rp.reading.Missed += int64(s.Missed)
						rp.mu.Unlock()
					}
				}
				rp.show(sc.snap, "m")
				if err := c.Step(ctx, sc.now); err != nil {
					t.Fatal(err)
				}
				c.Wait()
				got := live.calls[len(live.calls)-1]
				if !sameDecision(got.d, sc.d) {
					t.Fatalf("call %d at %v: live %+v, simulated %+v", i, sc.now.Sub(start), got.d, sc.d)
				}
				launches += len(sc.d.Launch)
				terms += len(sc.d.Terminate)
			}
			if len(live.calls) != len(rec.calls) {
				t.Fatalf("live calls %d, simulated %d", len(live.calls), len(rec.calls))
			}
			if launches == 0 || terms == 0 {
				t.Fatalf("the load scaled nothing (%d launches, %d terminations): the test compares nothing", launches, terms)
			}
			t.Logf("%d decisions equal, %d launches, %d terminations", len(rec.calls), launches, terms)
		})
	}
}

// sameDecision compares what a decision does: launches (model, type, tier), terminations and
// the reason.
func sameDecision(a, b autoscale.Decision) bool {
	if len(a.Launch) != len(b.Launch) || !slices.Equal(a.Terminate, b.Terminate) || a.Reason != b.Reason {
		return false
	}
	for i := range a.Launch {
		x, y := a.Launch[i], b.Launch[i]
		if x.Type != y.Type || x.Tier != y.Tier {
			return false
		}
	}
	return true
}
