package sloserve

import (
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/autoscale/mark"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/provider"
)

// stubWindows is a keep-alive policy with fixed windows that records what it observes.
type stubWindows struct {
	w        keepalive.Windows
	observed [][2]time.Time
}

func (p *stubWindows) Observe(start, end time.Time) {
	p.observed = append(p.observed, [2]time.Time{start, end})
}
func (p *stubWindows) Windows(time.Time) keepalive.Windows { return p.w }

func TestSloserveScale(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	ready := func(ids ...string) []autoscale.Member {
		var f []autoscale.Member
		for _, id := range ids {
			f = append(f, autoscale.Member{ID: id, Type: "local", Tier: provider.TierVM, State: provider.StateReady})
		}
		return f
	}
	// arrivals gives one-second samples ending at now: counts[i] arrivals in the i-th.
	arrivals := func(now time.Time, counts ...int) []autoscale.Sample {
		var h []autoscale.Sample
		for i, c := range counts {
			h = append(h, autoscale.Sample{Start: now.Add(time.Duration(i-len(counts)) * time.Second), Period: time.Second, Arrivals: c})
		}
		return h
	}
	plan := autoscale.Decision{Reason: mark.ReasonPlan}
	spec := provider.Spec{Model: "m", Type: "local", Tier: provider.TierVM}
	type step struct {
		now     time.Time
		hist    []autoscale.Sample
		fleet   []autoscale.Member
		queue   int
		mark    autoscale.Decision
		launch  int
		term    []string
		reason  string
		observe int // runs observed so far
	}
	tenMin := keepalive.Windows{KeepAlive: 10 * time.Second}
	for _, tc := range []struct {
		name  string
		w     keepalive.Windows
		lead  time.Duration
		steps []step
	}{
		{"busy: MArk decides, prefixed", tenMin, 0, []step{
			{now: sec(1), hist: arrivals(sec(1), 5), fleet: ready("a"), mark: autoscale.Decision{Launch: []provider.Spec{spec}, Reason: mark.ReasonPlan},
				launch: 1, reason: "sloserve: " + mark.ReasonPlan},
		}},
		{"busy: MArk may not take the last instance", tenMin, 0, []step{
			{now: sec(1), hist: arrivals(sec(1), 5), fleet: ready("a", "b"), mark: autoscale.Decision{Terminate: []string{"a", "b"}, Reason: mark.ReasonPlan},
				term: []string{"a"}, reason: "sloserve: " + mark.ReasonPlan},
		}},
		{"busy with no instance: cold start", tenMin, 0, []step{
			{now: sec(1), hist: arrivals(sec(1), 3), mark: autoscale.Decision{Reason: mark.ReasonHold}, launch: 1, reason: ReasonColdStart},
		}},
		{"busy with no instance, MArk launches: MArk's reason", tenMin, 0, []step{
			{now: sec(1), hist: arrivals(sec(1), 3), mark: autoscale.Decision{Launch: []provider.Spec{spec, spec}, Reason: mark.ReasonSLO},
				launch: 2, reason: "sloserve: " + mark.ReasonSLO},
		}},
		{"idle within keep-alive: last instance kept, surplus released", tenMin, 0, []step{
			{now: sec(1), hist: arrivals(sec(1), 4), fleet: ready("a", "b"), mark: plan, reason: "sloserve: " + mark.ReasonPlan},
			{now: sec(2), hist: arrivals(sec(2), 4, 0), fleet: ready("a", "b"), mark: autoscale.Decision{Terminate: []string{"a", "b"}, Reason: mark.ReasonPlan},
				term: []string{"a"}, reason: ReasonKeepAlive, observe: 1},
		}},
		{"idle past keep-alive: every instance released", tenMin, 0, []step{
			{now: sec(1), hist: arrivals(sec(1), 4), fleet: ready("a"), mark: plan, reason: "sloserve: " + mark.ReasonPlan},
			{now: sec(2), hist: arrivals(sec(2), 4, 0), fleet: ready("a"), mark: plan, reason: "sloserve: " + mark.ReasonPlan, observe: 1},
			{now: sec(11), hist: arrivals(sec(11), 0), fleet: ready("a"), mark: plan, reason: "sloserve: " + mark.ReasonPlan, observe: 1},
			{now: sec(12), hist: arrivals(sec(12), 0), fleet: ready("a", "b"), mark: plan, term: []string{"a", "b"}, reason: ReasonRelease, observe: 1},
			{now: sec(13), hist: arrivals(sec(13), 0), mark: plan, reason: ReasonIdle, observe: 1},
		}},
		{"idle past keep-alive with requests waiting: cold start", tenMin, 0, []step{
			{now: sec(0), fleet: ready("a"), mark: plan, reason: "sloserve: " + mark.ReasonPlan},
			{now: sec(30), hist: arrivals(sec(30), 0), mark: plan, reason: ReasonIdle},
			{now: sec(31), hist: arrivals(sec(31), 0), queue: 2, mark: plan, launch: 1, reason: ReasonColdStart},
		}},
		{"never used: the windows count from the first step", tenMin, 0, []step{
			{now: sec(0), fleet: ready("a"), mark: plan, reason: "sloserve: " + mark.ReasonPlan},
			{now: sec(11), hist: arrivals(sec(11), 0), fleet: ready("a"), mark: plan, term: []string{"a"}, reason: ReasonRelease},
		}},
		{"pre-warm: released in the pause, relaunched a lead ahead", keepalive.Windows{PreWarm: 20 * time.Second, KeepAlive: 10 * time.Second, Linger: 3 * time.Second}, 2 * time.Second, []step{
			{now: sec(1), hist: arrivals(sec(1), 4), fleet: ready("a"), mark: plan, reason: "sloserve: " + mark.ReasonPlan},
			{now: sec(2), hist: arrivals(sec(2), 0), fleet: ready("a"), mark: plan, reason: "sloserve: " + mark.ReasonPlan, observe: 1},
			{now: sec(6), hist: arrivals(sec(6), 0), fleet: ready("a"), mark: plan, term: []string{"a"}, reason: ReasonRelease, observe: 1},
			{now: sec(18), hist: arrivals(sec(18), 0), mark: plan, reason: ReasonIdle, observe: 1},
			{now: sec(19), hist: arrivals(sec(19), 0), mark: plan, launch: 1, reason: ReasonPreWarm, observe: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ka := &stubWindows{w: tc.w}
			var md autoscale.Decision
			s := &Idle{Mark: autoscale.ScalerFunc(func(autoscale.Snapshot, time.Time) autoscale.Decision {
				return autoscale.Decision{Launch: slices.Clone(md.Launch), Terminate: slices.Clone(md.Terminate), Reason: md.Reason}
			}), KeepAlive: ka, Spec: spec, Lead: tc.lead}
			for i, st := range tc.steps {
				md = st.mark
				d := s.Scale(autoscale.Snapshot{Fleet: st.fleet, History: st.hist, QueueLen: st.queue}, st.now)
				if len(d.Launch) != st.launch || !slices.Equal(d.Terminate, st.term) || d.Reason != st.reason {
					t.Fatalf("step %d: launch %d terminate %v reason %q, want %d %v %q", i, len(d.Launch), d.Terminate, d.Reason, st.launch, st.term, st.reason)
				}
				if len(ka.observed) != st.observe {
					t.Fatalf("step %d: %d runs observed, want %d", i, len(ka.observed), st.observe)
				}
			}
		})
	}
}

// TestSloserveObservesRuns: a run of busy samples is one invocation, from the first busy
// sample's start to the last one's end.
func TestSloserveObservesRuns(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ka := &stubWindows{w: keepalive.Windows{KeepAlive: time.Hour}}
	s := &Idle{Mark: autoscale.ScalerFunc(func(autoscale.Snapshot, time.Time) autoscale.Decision { return autoscale.Decision{} }), KeepAlive: ka}
	for i, n := range []int{0, 2, 5, 1, 0, 0, 3, 0} {
		start := t0.Add(time.Duration(i) * time.Second)
		s.Scale(autoscale.Snapshot{History: []autoscale.Sample{{Start: start, Period: time.Second, Arrivals: n}}}, start.Add(time.Second))
	}
	want := [][2]time.Time{{t0.Add(time.Second), t0.Add(4 * time.Second)}, {t0.Add(6 * time.Second), t0.Add(7 * time.Second)}}
	if !slices.Equal(ka.observed, want) {
		t.Fatalf("observed %v, want %v", ka.observed, want)
	}
}
