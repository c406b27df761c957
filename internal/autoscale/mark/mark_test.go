package mark

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/forecast"
	"github.com/sloserve/sloserve/internal/planner"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slomon"
)

var epoch = time.Date(2026, 5, 25, 0, 0, 0, 0, time.UTC)

// newTestScaler returns a MArk scaler over c5.large (and its spot variant with spot) serving
// Inception-v3 at MArk's measured 284 requests/min, 600 ms SLO.
func newTestScaler(t *testing.T, spot bool) *Scaler {
	t.Helper()
	c, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: 60 * time.Second / 284}})
	if err != nil {
		t.Fatal(err)
	}
	m := profile.Model{Name: "inception-v3", VM: map[string]profile.Backend{"c5.large": {Curve: c, Slots: 1}}}
	cat := cost.DefaultCatalog()
	cand, err := Tune(&cat, m, []string{"c5.large"}, 300*time.Millisecond, spot)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Model: m.Name, Candidates: cand, Planner: planner.DefaultMarkConfig(), Monitor: forecast.DefaultMonitorConfig(),
		SLOMonitor: slomon.DefaultConfig(), Spot: planner.DefaultSpotConfig()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fakeFleet applies decisions as a provider would: launches become ready after delay,
// terminations leave at once. It records when each instance went.
type fakeFleet struct {
	members []autoscale.Member
	delay   time.Duration
	next    int
	gone    map[string]time.Time
}

func (f *fakeFleet) apply(d autoscale.Decision, now time.Time) (launched []string) {
	for _, sp := range d.Launch {
		id := fmt.Sprintf("new-%d", f.next)
		f.next++
		f.members = append(f.members, autoscale.Member{ID: id, Type: sp.Type, State: provider.StateLaunching, Launched: now})
		launched = append(launched, id)
	}
	f.members = slices.DeleteFunc(f.members, func(m autoscale.Member) bool {
		if slices.Contains(d.Terminate, m.ID) {
			f.gone[m.ID] = now
			return true
		}
		return false
	})
	return launched
}

func (f *fakeFleet) tick(now time.Time) {
	for i, m := range f.members {
		if m.State == provider.StateLaunching && !now.Before(m.Launched.Add(f.delay)) {
			f.members[i].State, f.members[i].Ready = provider.StateReady, now
		}
	}
}

// TestMarkReactiveLaunchServesUntilSLORecovers is issue #18 item 1: 80 req/s on 20 ready
// c5.large (17 needed) with every request missing. The SLO monitor launches a c5.large at t = 0
// and another after each 5 min cool-down; none of them may be terminated while the SLO is
// violated (before the fix the first went at t = 3 min, still launching: the next plan counted
// it as running, kept the ready ones first and let it go after the 2 min cool-down). Once the
// misses stop, the SLO recovers and the reactive instances go back to the plan, which
// terminates the surplus after its cool-down.
func TestMarkReactiveLaunchServesUntilSLORecovers(t *testing.T) {
	s := newTestScaler(t, false)
	fl := &fakeFleet{delay: 100 * time.Second, gone: map[string]time.Time{}}
	for i := range 20 {
		fl.members = append(fl.members, autoscale.Member{ID: fmt.Sprintf("vm-%02d", i), Type: "c5.large", State: provider.StateReady, Launched: epoch.Add(-time.Hour), Ready: epoch.Add(-time.Hour)})
	}
	const missUntil = 12 * time.Minute
	var reactive []string
	reactiveAt := map[string]time.Duration{}
	var d0 autoscale.Decision
	for sec := -10 * 60; sec < 30*60; sec++ { // 10 min of met requests, then misses until missUntil
		now := epoch.Add(time.Duration(sec) * time.Second)
		fl.tick(now)
		smp := autoscale.Sample{Start: now.Add(-time.Second), Period: time.Second, Arrivals: 80, Completed: 80}
		if sec >= 0 && now.Sub(epoch) < missUntil {
			smp.Missed = 80
		}
		if testing.Verbose() && sec%60 == 0 {
			t.Logf("%v: fleet %d, decision %q launch %d terminate %v", now.Sub(epoch), len(fl.members), d0.Reason, len(d0.Launch), d0.Terminate)
		}
		d := s.Scale(autoscale.Snapshot{Fleet: fl.members, History: []autoscale.Sample{smp}}, now)
		d0 = d
		ids := fl.apply(d, now)
		if d.Reason == ReasonSLO {
			reactive = append(reactive, ids...)
			for _, id := range ids {
				reactiveAt[id] = now.Sub(epoch)
			}
		}
	}
	if len(reactive) < 3 {
		t.Fatalf("SLO monitor launched %v in 12 min of misses, want one per 5 min cool-down (≥ 3)", reactive)
	}
	for _, id := range reactive {
		at, ok := fl.gone[id]
		if ok && at.Sub(epoch) < missUntil {
			t.Errorf("reactive %s (launched at %v) terminated at %v while every request missed", id, reactiveAt[id], at.Sub(epoch))
		}
	}
	gone := 0
	for _, id := range reactive {
		if _, ok := fl.gone[id]; ok {
			gone++
		}
	}
	if gone == 0 {
		t.Errorf("no reactive instance released after the SLO recovered at %v (fleet of %d for 17 needed)", missUntil, len(fl.members))
	}
}

// TestMarkScalerForgetsGoneInterruptions: the set of interrupted ids already handled only holds
// ids still in the fleet (issue #18 item 5: it grew for ever in the live controller).
func TestMarkScalerForgetsGoneInterruptions(t *testing.T) {
	s := newTestScaler(t, true)
	fleet := []autoscale.Member{
		{ID: "a", Type: "c5.large/spot", State: provider.StateInterrupted, Spot: true, Launched: epoch},
		{ID: "b", Type: "c5.large/spot", State: provider.StateReady, Spot: true, Launched: epoch, Ready: epoch},
	}
	now := epoch.Add(time.Hour)
	if d := s.Scale(autoscale.Snapshot{Fleet: fleet}, now); d.Reason != ReasonSpot {
		t.Fatalf("Reason = %q, want %q", d.Reason, ReasonSpot)
	}
	if d := s.Scale(autoscale.Snapshot{Fleet: fleet}, now.Add(time.Second)); d.Reason == ReasonSpot {
		t.Errorf("interruption of a handled twice")
	}
	s.Scale(autoscale.Snapshot{Fleet: fleet[1:]}, now.Add(2*time.Second))
	if len(s.seen) != 0 {
		t.Errorf("seen = %v after a left the fleet, want empty", s.seen)
	}
}

// TestTuneCountsSlotsInNoBatchingRate (issue #18 item 5): T_1 = 100 ms, T_2 = 150 ms. With one
// slot a batch of 2 beats serving them one by one (150 ≤ 200 ms); with four slots the instance
// serves two requests in 50 ms without batching, so the rule keeps N_batch = 1.
func TestTuneCountsSlotsInNoBatchingRate(t *testing.T) {
	c, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: 100 * time.Millisecond}, {Batch: 2, Time: 150 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	cat := cost.DefaultCatalog()
	for _, tc := range []struct {
		slots, wantBatch int
		wantCap          float64
	}{{1, 2, 2 / 0.15}, {4, 1, 4 / 0.1}} {
		m := profile.Model{Name: "m", VM: map[string]profile.Backend{"c5.large": {Curve: c, Slots: tc.slots}}}
		cand, err := Tune(&cat, m, nil, 300*time.Millisecond, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := cand.Types[0]; got.MaxBatch != tc.wantBatch || math.Abs(got.Capacity-tc.wantCap) > 1e-9 {
			t.Errorf("slots %d: N_batch %d μ* %.2f, want %d and %.2f", tc.slots, got.MaxBatch, got.Capacity, tc.wantBatch, tc.wantCap)
		}
	}
}
