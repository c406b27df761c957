// Package policytest is the conformance suite every registered policy passes: built through
// the registry, deterministic for the same facts, and keeping the invariants its port promises.
// A policy package's test calls it for its names; TestRegistered runs it for every
// registration of policy/builtin.
package policytest

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
)

// The load Cluster drives a policy with, one control step a second: rampSteps up to peakRPS,
// rampSteps down, then idle for idleSteps — longer than every keep-alive of the registered
// policies (a fixed 10 minutes the longest), so each must have let instances go by the end.
const (
	rampSteps = 60
	idleSteps = 1200
	peakRPS   = 400
	// ClusterSteps is how many control steps Cluster drives a policy through.
	ClusterSteps = 2*rampSteps + idleSteps
)

// Cluster checks the Cluster policy registered under name:
//   - two instances built through the registry and driven with the same facts make the same
//     decisions, step for step (no wall clock, no randomness of their own, no shared state);
//   - every launch names a function of the view, a server of the cluster and a positive share
//     that fits on it; every release and preemption names a live instance, none twice; every
//     weight is finite and ≥ 0 and names an instance live before or after the decision (a
//     weight for one released at the same step is moot, not wrong);
//   - the policy serves a rising then falling load: it launches while the rate rises and holds
//     fewer instances after a long idle time than at the peak.
func Cluster(t *testing.T, name string) {
	t.Helper()
	a, err := policy.NewCluster(name, nil)
	if err != nil {
		t.Fatalf("NewCluster(%q): %v", name, err)
	}
	b, err := policy.NewCluster(name, nil)
	if err != nil {
		t.Fatalf("NewCluster(%q) again: %v", name, err)
	}
	if a.Name() == "" {
		t.Errorf("%s: empty Name", name)
	}
	wa, wb := newWorld(), newWorld()
	peak, last := 0, 0
	for step := range ClusterSteps {
		now := wa.epoch.Add(time.Duration(step) * time.Second)
		da, err := a.Control(wa.view(step), now)
		if err != nil {
			t.Fatalf("%s: step %d: %v", name, step, err)
		}
		db, err := b.Control(wb.view(step), now)
		if err != nil {
			t.Fatalf("%s: step %d (second instance): %v", name, step, err)
		}
		if !reflect.DeepEqual(da, db) { // Reasons included: the same facts, the same explanation
			t.Fatalf("%s: step %d: two instances decided differently on the same facts:\n%+v\n%+v", name, step, da, db)
		}
		if err := wa.apply(da); err != nil {
			t.Fatalf("%s: step %d: %v (decision %+v)", name, step, err, da)
		}
		if err := wb.apply(db); err != nil {
			t.Fatalf("%s: step %d (second instance): %v", name, step, err)
		}
		n := len(wa.live)
		peak = max(peak, n)
		last = n
	}
	if peak == 0 {
		t.Errorf("%s: launched nothing for a load of up to %d rps", name, peakRPS)
	}
	if last >= peak && peak > 1 {
		t.Errorf("%s: %d instances after %d s idle, %d at the load's peak: want fewer", name, last, idleSteps, peak)
	}
}

// rateAt is the load at step: up from 0 to peakRPS, down to 0, then none.
func rateAt(step int) float64 {
	switch {
	case step <= rampSteps:
		return peakRPS * float64(step) / rampSteps
	case step <= 2*rampSteps:
		return peakRPS * float64(2*rampSteps-step) / rampSteps
	}
	return 0
}

// world is the conformance suite's cluster: one function, decisions applied at once, launches
// ready the step after.
type world struct {
	epoch    time.Time
	cl       *cluster.Cluster
	live     map[int]policy.InstanceView
	next     int
	arrivals int64
}

func newWorld() *world {
	return &world{epoch: time.Unix(1_700_000_000, 0), cl: cluster.New(8, cluster.DefaultServer), live: map[int]policy.InstanceView{}}
}

// conformanceProfile has CPU-only and GPU configurations at batch 1 and 4, and OpenFaaS+'s
// fixed ⟨2 threads, 10 % SMs⟩ at batch 1.
func conformanceProfile() profile.INFlessProfile {
	ms := time.Millisecond
	return profile.INFlessProfile{Model: "conf", Points: []profile.INFlessPoint{
		{CPU: 2, GPU: 0, Batch: 1, Latency: 20 * ms},
		{CPU: 2, GPU: 0, Batch: 4, Latency: 45 * ms},
		{CPU: 2, GPU: 10, Batch: 1, Latency: 8 * ms},
		{CPU: 2, GPU: 20, Batch: 1, Latency: 4 * ms},
		{CPU: 2, GPU: 20, Batch: 4, Latency: 9 * ms},
	}}
}

func (w *world) view(step int) policy.ClusterView {
	r := rateAt(step)
	w.arrivals += int64(r)
	fv := policy.FunctionView{Index: 0, Name: "conf", Profile: conformanceProfile(), SLO: 200 * time.Millisecond,
		MeanRPS: 200, Target: 0.98, Rate: r, RateNow: r, Arrivals: w.arrivals}
	for _, id := range slices.Sorted(maps.Keys(w.live)) {
		fv.Instances = append(fv.Instances, w.live[id])
	}
	return policy.ClusterView{Cluster: w.cl.Clone(), Beta: cluster.DefaultBeta, Functions: []policy.FunctionView{fv}}
}

// apply checks d's invariants against the world and applies it: preemptions and releases free
// their resources, launches are placed (starting, ready at the next step), lending is ignored.
func (w *world) apply(d policy.ClusterDecision) error {
	before := maps.Clone(w.live)
	for id, in := range w.live {
		in.Ready = true
		w.live[id] = in
	}
	seen := map[int]bool{}
	for _, ids := range [][]int{d.Preempt, d.Release} {
		for _, id := range ids {
			in, ok := w.live[id]
			if !ok || seen[id] {
				return fmt.Errorf("release or preemption of instance %d: not live, or named twice", id)
			}
			seen[id] = true
			if err := w.cl.Release(in.Launch.Server, in.Launch.Resources); err != nil {
				return fmt.Errorf("instance %d: %w", id, err)
			}
			delete(w.live, id)
		}
	}
	for _, l := range d.Launch {
		if l.Function != 0 || l.Server < 0 || l.Server >= w.cl.Len() || l.Resources.CPU+l.Resources.GPU <= 0 {
			return fmt.Errorf("launch %+v: no such function or server, or no resources", l)
		}
		if err := w.cl.Place(l.Server, l.Resources); err != nil {
			return fmt.Errorf("launch %+v: %w", l, err)
		}
		w.live[w.next] = policy.InstanceView{ID: w.next, Launch: l, Resources: l.Resources}
		w.next++
	}
	for id, r := range d.Weights {
		_, now := w.live[id]
		_, was := before[id]
		if !(now || was) || !(r >= 0) || math.IsInf(r, 1) {
			return fmt.Errorf("weight %v for instance %d: not a live instance, or not a rate", r, id)
		}
	}
	return nil
}
