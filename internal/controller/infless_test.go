package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
)

// inflessCurve: T_b = 4 ms + 1 ms·b, measured up to b = 32.
func inflessCurve(t *testing.T) profile.Curve {
	t.Helper()
	var pts []profile.Point
	for b := 1; b <= 32; b *= 2 {
		pts = append(pts, profile.Point{Batch: b, Time: time.Duration(4+b) * time.Millisecond})
	}
	c, err := profile.NewCurve(pts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestINFlessProfileFromCurve(t *testing.T) {
	c := inflessCurve(t)
	for _, tc := range []struct {
		maxBatch int
		want     []int
	}{{0, []int{1, 2, 4, 8, 16, 32}}, {8, []int{1, 2, 4, 8}}, {6, []int{1, 2, 4}}, {1, []int{1}}} {
		p := INFlessProfileFromCurve("m", c, tc.maxBatch)
		var got []int
		for _, x := range p.Points {
			if x.CPU != INFlessThreads || x.GPU != 0 || x.Latency != c.ServiceTime(x.Batch) {
				t.Errorf("max %d: point %+v, want 1 thread, no GPU, the curve's time", tc.maxBatch, x)
			}
			got = append(got, x.Batch)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("max %d: batches %v, want %v", tc.maxBatch, got, tc.want)
		}
	}
}

// samples returns n one-second samples ending at now with rps arrivals each.
func samples(now time.Time, n int, rps int) []autoscale.Sample {
	var h []autoscale.Sample
	for k := n; k >= 1; k-- {
		h = append(h, autoscale.Sample{Start: now.Add(-time.Duration(k) * time.Second), Period: time.Second, Arrivals: rps})
	}
	return h
}

// TestINFlessScale drives the live INFless scaler through INFless's cases with the simulator's
// policy underneath: a cold start places instances whose r_up covers R (Alg. 1: ⟨b, 1 thread⟩ on
// the cluster's server, batch timeout t_slo − t_exec); inside the α-band it holds and sets the
// ready instances' dispatch weights to the α-band rates; below the band, held 30 s, it releases
// what R does not need; without servers it does nothing.
func TestINFlessScale(t *testing.T) {
	spec := provider.Spec{Model: "m", Type: "local", Tier: provider.TierVM}
	slo := 100 * time.Millisecond
	prof := INFlessProfileFromCurve("m", inflessCurve(t), 0)
	newScaler := func() *INFless {
		s, err := NewINFless(spec, slo, prof, 5*time.Second, INFlessLiveOptions(5*time.Second, 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	servers := func() *cluster.Cluster { return cluster.New(2, cluster.Resources{CPU: 4}) }
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

	t.Run("no servers", func(t *testing.T) {
		d := newScaler().Scale(autoscale.Snapshot{History: samples(t0, 5, 100)}, t0)
		if len(d.Launch)+len(d.Terminate) != 0 || !strings.Contains(d.Reason, "no servers") {
			t.Fatalf("decision %+v, want nothing and a reason naming the servers", d)
		}
	})

	t.Run("cold start covers R", func(t *testing.T) {
		s := newScaler()
		c := servers()
		d := s.Scale(autoscale.Snapshot{History: samples(t0, 5, 300), Cluster: c}, t0)
		if len(d.Launch) == 0 {
			t.Fatalf("no launch at 300 rps: %+v", d)
		}
		var up float64
		for _, sp := range d.Launch {
			if sp.Model != "m" || sp.Type != "local" || sp.Resources != (cluster.Resources{CPU: 1}) || sp.Server < 0 || sp.Server > 1 {
				t.Errorf("launch %+v: want model m, type local, 1 thread on server 0 or 1", sp)
			}
			exec := time.Duration(float64(prof.Points[0].Latency) * (1 + infless.DefaultOffset))
			for _, x := range prof.Points {
				if x.Batch == sp.MaxBatch {
					exec = time.Duration(float64(x.Latency) * (1 + infless.DefaultOffset))
				}
			}
			if sp.MaxWait != slo-exec {
				t.Errorf("launch b=%d: batch timeout %v, want t_slo − t_exec = %v", sp.MaxBatch, sp.MaxWait, slo-exec)
			}
			b, ok := infless.RateBounds(sp.MaxBatch, exec, slo)
			if !ok {
				t.Fatalf("launch b=%d infeasible", sp.MaxBatch)
			}
			up += b.Up
		}
		if up < 300 {
			t.Errorf("launched r_up %.0f/s < R 300/s", up)
		}
		if !strings.HasPrefix(d.Reason, "infless: ") || !strings.Contains(d.Reason, "Alg. 1 places") {
			t.Errorf("reason %q", d.Reason)
		}
	})

	// One ready instance ⟨b=8, 1 thread⟩ on server 0: t_exec 13.2 ms, r_up = 75 × 8 = 600/s.
	ready := autoscale.Member{ID: "w-1", State: provider.StateReady,
		Spec: provider.Spec{Model: "m", MaxBatch: 8, MaxWait: 87 * time.Millisecond, Resources: cluster.Resources{CPU: 1}, Server: 0}}
	used := func() *cluster.Cluster {
		c := servers()
		if err := c.Place(0, ready.Spec.Resources); err != nil {
			t.Fatal(err)
		}
		return c
	}

	t.Run("inside the band: hold, weights", func(t *testing.T) {
		s := newScaler()
		d := s.Scale(autoscale.Snapshot{Fleet: []autoscale.Member{ready}, History: samples(t0, 5, 550), Cluster: used()}, t0)
		if len(d.Launch)+len(d.Terminate) != 0 {
			t.Fatalf("550 rps on r_up 600: %+v, want hold", d)
		}
		if w := d.Weights["w-1"]; !(w > 0) {
			t.Errorf("weights %v, want a rate for w-1", d.Weights)
		}
	})

	t.Run("below the band: release after 30 s", func(t *testing.T) {
		s := newScaler()
		second := ready
		second.ID = "w-2" // on server 0 too (on two servers Defragment would first move one)
		c := used()
		if err := c.Place(0, second.Spec.Resources); err != nil {
			t.Fatal(err)
		}
		fleet := []autoscale.Member{ready, second}
		for _, step := range []struct {
			at   time.Duration
			want int
		}{{0, 0}, {10 * time.Second, 0}, {31 * time.Second, 1}} {
			now := t0.Add(step.at)
			d := s.Scale(autoscale.Snapshot{Fleet: fleet, History: samples(now, 5, 100), Cluster: c.Clone()}, now)
			if len(d.Terminate) != step.want || len(d.Launch) != 0 {
				t.Fatalf("at %v: terminate %v launch %d, want %d terminations", step.at, d.Terminate, len(d.Launch), step.want)
			}
		}
	})
}

func TestNewINFlessErrors(t *testing.T) {
	prof := profile.INFlessProfile{Model: "m", Points: []profile.INFlessPoint{{CPU: 1, Batch: 1, Latency: time.Millisecond}}}
	o := INFlessLiveOptions(5*time.Second, 30*time.Second)
	for _, tc := range []struct {
		name string
		f    func() error
	}{
		{"no model", func() error { _, err := NewINFless(provider.Spec{}, time.Second, prof, time.Second, o); return err }},
		{"zero slo", func() error { _, err := NewINFless(provider.Spec{Model: "m"}, 0, prof, time.Second, o); return err }},
		{"empty profile", func() error {
			_, err := NewINFless(provider.Spec{Model: "m"}, time.Second, profile.INFlessProfile{}, time.Second, o)
			return err
		}},
		{"bad options", func() error {
			bad := o
			bad.Alpha = 2
			_, err := NewINFless(provider.Spec{Model: "m"}, time.Second, prof, time.Second, bad)
			return err
		}},
	} {
		if err := tc.f(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestNewModelINFlessCOP: with controller.cluster.operator_store, live INFless plans a model the
// store holds the graph of with COP's predicted ⟨b, c⟩ grid — every thread count of the store —
// instead of the one-thread curve, and a model it lacks is refused naming the option.
func TestNewModelINFlessCOP(t *testing.T) {
	cfg := config.Default()
	cfg.Controller.Policy = "infless"
	cfg.Controller.Cluster.OperatorStore = "../profile/testdata/opstore.json"
	m := config.DefaultModel("mlp256")
	m.InstanceType.RPS = 100
	curve, err := LocalCurve(100, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := NewModel(cfg, m, curve, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := cm.Scaler.(*INFless)
	if !ok {
		t.Fatalf("scaler %T, want *INFless", cm.Scaler)
	}
	threads := map[int]bool{}
	for _, p := range s.prof.Points {
		threads[p.CPU] = true
		if p.Latency == curve.ServiceTime(p.Batch) {
			t.Errorf("point %+v is the curve's time: not COP's", p)
		}
	}
	if !threads[1] || !threads[2] {
		t.Errorf("COP profile threads %v, want 1 and 2", threads)
	}
	m.Name = "not-in-store"
	if _, err := NewModel(cfg, m, curve, time.Unix(0, 0)); err == nil || !strings.Contains(err.Error(), "operator_store") {
		t.Errorf("a model without a graph in the store: err %v, want one naming controller.cluster.operator_store", err)
	}
}
