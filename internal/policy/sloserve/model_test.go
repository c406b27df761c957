package sloserve

import (
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// epoch is the runs' start in these tests (the simulator's default epoch).
var epoch = time.Date(2017, 5, 25, 0, 0, 0, 0, time.UTC)

func testCurve(t *testing.T, ms map[int]float64) profile.Curve {
	t.Helper()
	var ps []profile.Point
	for b, v := range ms {
		ps = append(ps, profile.Point{Batch: b, Time: time.Duration(v * float64(time.Millisecond))})
	}
	c, err := profile.NewCurve(ps)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newSloserveFor(t *testing.T, m profile.Model, spec slo.Spec, load policy.LoadStats) (policy.Model, *modelPolicy) {
	t.Helper()
	cat := cost.DefaultCatalog()
	p, err := policy.NewModel("sloserve", policy.Env{Start: epoch, Catalog: &cat, Model: m, SLO: spec, Load: load})
	if err != nil {
		t.Fatalf("New(sloserve): %v", err)
	}
	s, _ := p.Scaler.(*modelPolicy)
	return p, s
}

// TestSloserveTierChoice: the base load goes to the cheaper tier at the trace's mean rate.
func TestSloserveTierChoice(t *testing.T) {
	vm := map[string]profile.Backend{"c5.large": {Curve: testCurve(t, map[int]float64{1: 35, 8: 39, 32: 56}), Slots: 9}}
	cases := []struct {
		name     string
		sl       profile.MemoryCurves
		wantTier string
	}{
		// A 1 s single request cannot meet 200 ms on Lambda: VMs only.
		{"serverless too slow", profile.MemoryTable{3008: testCurve(t, map[int]float64{1: 1000, 8: 1100})}, TierVM},
		// 20 ms for 32 requests at 128 MB: batching on Lambda costs next to nothing.
		{"serverless batching cheap", profile.MemoryTable{128: testCurve(t, map[int]float64{1: 10, 32: 20})}, TierServerless},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := profile.Model{Name: "m", VM: vm, Serverless: tc.sl}
			p, s := newSloserveFor(t, m, slo.Spec{Threshold: 200 * time.Millisecond, Target: 0.98}, policy.LoadStats{MeanRPS: 100, PeakRPS: 150})
			if s == nil {
				t.Fatal("no scaler: want the VM tier wired")
			}
			if s.tier != tc.wantTier {
				t.Errorf("tier (-want +got): -%s +%s (vm $%g/s, serverless $%g/s)", tc.wantTier, s.tier, s.vmCost(100), s.serverlessCost(100))
			}
			now := epoch
			s.Scale(autoscale.Snapshot{Fleet: []autoscale.Member{{ID: "vm-1", Type: "c5.large", State: provider.StateReady, Slots: 9}}}, now)
			idle := policy.TierView{Ready: 1, Slots: 9, FreeSlots: 9, MaxBatch: 1, BatchTime: 35 * time.Millisecond,
				Admission: admission.Admit(admission.Facts{Queued: 1, Slots: 9}, now.Add(200*time.Millisecond), now)}
			r := p.Router.Route(policy.Request{Arrival: now, Deadline: now.Add(200 * time.Millisecond)}, idle, now)
			if wantSL := tc.wantTier == TierServerless; (r == policy.RouteServerless) != wantSL {
				t.Errorf("route with an idle fleet: got %v, want serverless %v", r, wantSL)
			}
			if tc.wantTier == TierServerless && len(p.Initial) != 0 {
				t.Errorf("initial fleet on the serverless tier: got %d instances, want 0", len(p.Initial))
			}
		})
	}
}

// TestSloserveReasonsNamePieces: every decision says which piece made it.
func TestSloserveReasonsNamePieces(t *testing.T) {
	p, s := newSloserveFor(t, profile.InferAllInception(), slo.DefaultSpec(), policy.LoadStats{MeanRPS: 50, PeakRPS: 80})
	now := epoch.Add(time.Minute)
	d := s.Scale(autoscale.Snapshot{}, now)
	if !strings.HasPrefix(d.Reason, "mark: ") && !strings.HasPrefix(d.Reason, "sloserve: ") {
		t.Errorf("scaler reason %q: want a mark: or sloserve: prefix", d.Reason)
	}
	q := batching.Queue{Len: 1, Oldest: now, EarliestDeadline: now.Add(200 * time.Millisecond), Free: 1}
	if r := p.Batching.Decide(q, now).Reason; !strings.HasPrefix(r, "mark: ") {
		t.Errorf("VM batching reason %q: want a mark: prefix", r)
	}
	if r := p.Serverless.Batching.Decide(q, now).Reason; !strings.HasPrefix(r, "batch: ") {
		t.Errorf("serverless batching reason %q: want a batch: prefix", r)
	}
}

// TestSloserveDeadlineGuard: the serverless buffer dispatches by deadline − S(k) even when
// BATCH's timeout is longer.
func TestSloserveDeadlineGuard(t *testing.T) {
	p, _ := newSloserveFor(t, profile.InferAllInception(), slo.Spec{Threshold: 600 * time.Millisecond, Target: 0.98}, policy.LoadStats{MeanRPS: 50, PeakRPS: 80})
	b := p.Serverless.Batching
	// One minute of 50 req/s arrivals, then the online planner's first fit (BATCH §VI-D).
	start := epoch
	b.Decide(batching.Queue{}, start)
	arr := make([]time.Time, 3000)
	for i := range arr {
		arr[i] = start.Add(time.Duration(i) * 20 * time.Millisecond)
	}
	b.Observe(batching.Outcome{Size: len(arr), Arrivals: arr}, start.Add(time.Minute))
	t0 := start.Add(time.Minute)
	b.Decide(batching.Queue{}, t0)
	if b.MaxBatch() < 2 {
		t.Fatalf("BATCH's plan after a fit: max batch %d, want > 1", b.MaxBatch())
	}
	q := batching.Queue{Len: 1, Oldest: t0, EarliestDeadline: t0.Add(600 * time.Millisecond), Free: 10}
	d := b.Decide(q, t0)
	if d.Dispatch != 0 {
		t.Fatalf("at arrival: dispatch %d, want to wait", d.Dispatch)
	}
	// The guard's time: deadline − (1 − 0.92) × 600 ms − S(1), and S(1) ≥ 144 ms (3008 MB).
	latest := t0.Add(600*time.Millisecond - 48*time.Millisecond - 144*time.Millisecond)
	if d.Next.IsZero() || d.Next.After(latest) {
		t.Errorf("next (-want ≤ +got): -%v +%v", latest, d.Next)
	}
	if d := b.Decide(q, latest); d.Dispatch != 1 {
		t.Errorf("at the guard: got %+v, want dispatch 1", d)
	}
}

// TestSloserveKeepsOneVMWithoutServerless: with no serverless tier nothing absorbs an empty
// fleet, so the last instance stays however idle it is.
func TestSloserveKeepsOneVMWithoutServerless(t *testing.T) {
	m := profile.Model{Name: "m", VM: map[string]profile.Backend{"container.1cpu": {Curve: testCurve(t, map[int]float64{1: 40, 10: 46}), Slots: 1}}}
	p, s := newSloserveFor(t, m, slo.Spec{Threshold: 500 * time.Millisecond, Target: 0.95}, policy.LoadStats{MeanRPS: 0.1, PeakRPS: 1})
	if len(p.Initial) != 1 {
		t.Fatalf("initial fleet: got %d, want 1", len(p.Initial))
	}
	fleet := []autoscale.Member{{ID: "vm-1", Type: "container.1cpu", State: provider.StateReady, Launched: epoch, Ready: epoch, Slots: 1}}
	for i := 1; i <= 30; i++ {
		now := epoch.Add(time.Duration(i) * time.Minute)
		d := s.Scale(autoscale.Snapshot{Fleet: fleet}, now)
		if len(d.Terminate) > 0 && len(d.Launch) == 0 {
			t.Fatalf("minute %d: terminated %v with nothing launched (reason %q)", i, d.Terminate, d.Reason)
		}
	}
	now := epoch
	if r := p.Router.Route(policy.Request{Arrival: now, Deadline: now.Add(time.Second)}, policy.TierView{Admission: admission.Verdict{Admit: true}}, now); r != policy.RouteVM {
		t.Errorf("route of an admitted request: got %v, want the VM tier", r)
	}
	if r := p.Router.Route(policy.Request{Arrival: now, Deadline: now.Add(time.Second)}, policy.TierView{}, now); r != policy.RouteReject {
		t.Errorf("route of a refused request without a serverless tier: got %v, want reject (the live 429)", r)
	}
}

// TestSloserveServerlessOnly: a model with no VM profile is served on the serverless tier alone.
// TestSloserveOptionsValidate names the bad field.
func TestSloserveOptionsValidate(t *testing.T) {
	cases := []struct {
		name  string
		set   func(*Options)
		field string
	}{
		{"hysteresis", func(o *Options) { o.Hysteresis = 1 }, "sloserve.hysteresis"},
		{"tier", func(o *Options) { o.Tier = "gpu" }, "sloserve.tier"},
		{"vm batching", func(o *Options) { o.VMBatching = "x" }, "sloserve.vm_batching"},
		{"max batch", func(o *Options) { o.Serverless.MaxBatch = 0 }, "sloserve.serverless.max_batch"},
		{"guard", func(o *Options) { o.Serverless.LatencyGuard = 0 }, "sloserve.serverless.latency_guard"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions(policy.Env{})
			if err := o.Validate(); err != nil {
				t.Fatalf("defaults: %v", err)
			}
			tc.set(&o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Validate: got %v, want an error naming %s", err, tc.field)
			}
		})
	}
}
