package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/provider"
)

// fakeProvider makes every launched instance ready at once.
type fakeProvider struct {
	mu         sync.Mutex
	insts      map[string]provider.Instance
	seq        int
	terminated []string
}

func newFakeProvider() *fakeProvider { return &fakeProvider{insts: map[string]provider.Instance{}} }

func (p *fakeProvider) Launch(ctx context.Context, s provider.Spec) (provider.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	in := provider.Instance{ID: fmt.Sprintf("%s-%d", s.Model, p.seq), Spec: s, State: provider.StateReady,
		Addr: fmt.Sprintf("http://127.0.0.1:%d", 9000+p.seq), Launched: time.Unix(int64(p.seq), 0)}
	p.insts[in.ID] = in
	return in, nil
}

func (p *fakeProvider) Terminate(ctx context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.insts[id]; !ok {
		return provider.ErrNotFound
	}
	delete(p.insts, id)
	p.terminated = append(p.terminated, id)
	return nil
}

func (p *fakeProvider) Instances(ctx context.Context) ([]provider.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []provider.Instance
	for _, in := range p.insts {
		out = append(out, in)
	}
	return out, nil
}

// fakeGateway records what the controller asked of it.
type fakeGateway struct {
	mu      sync.Mutex
	synced  []string // ready ids of the last Sync
	removed []string
}

func (g *fakeGateway) Sync(ctx context.Context, insts []provider.Instance) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.synced = g.synced[:0]
	for _, in := range insts {
		if in.State == provider.StateReady {
			g.synced = append(g.synced, in.ID)
		}
	}
	slices.Sort(g.synced)
	return nil
}

func (g *fakeGateway) RemoveInstance(ctx context.Context, model, id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removed = append(g.removed, id)
	return nil
}

// counter is a scripted Reader.
type counter struct{ r Reading }

func (c *counter) read(string) (Reading, error) { return c.r, nil }

func TestStepAppliesDecisions(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var snaps []autoscale.Snapshot
	decisions := []autoscale.Decision{
		{Launch: []provider.Spec{{Type: "local"}, {Type: "local"}, {Type: "local"}}, Reason: "up"},
		{Reason: "hold"},
		{Terminate: []string{"m-1", "m-2", "m-3"}, Reason: "down"},
	}
	i := 0
	sc := autoscale.ScalerFunc(func(s autoscale.Snapshot, now time.Time) autoscale.Decision {
		snaps = append(snaps, s)
		d := decisions[min(i, len(decisions)-1)]
		i++
		return d
	})
	p, g, cnt := newFakeProvider(), &fakeGateway{}, &counter{}
	c, err := New(p, g, cnt.read, []Model{{Name: "m", Scaler: sc, Type: "local", PricePerHour: 3.6, Min: 1, Max: 2}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Step 1: the scaler asks for three; Max 2 allows two.
	if err := c.Step(ctx, t0); err != nil {
		t.Fatal(err)
	}
	if got := len(p.insts); got != 2 {
		t.Errorf("instances after launch (-want +got): -2 +%d", got)
	}
	if want := []string{"m-1", "m-2"}; !slices.Equal(g.synced, want) {
		t.Errorf("synced (-want +got):\n- %v\n+ %v", want, g.synced)
	}
	// Step 2: 50 arrivals, 40 completed, 4 missed, 20 s in the system over 2 s.
	cnt.r = Reading{Arrivals: 50, Completed: 40, Missed: 4, InSystem: 20 * time.Second}
	if err := c.Step(ctx, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	h := snaps[1].History
	want := autoscale.Sample{Start: t0, Period: 2 * time.Second, Arrivals: 50, Completed: 40, Missed: 4, Concurrency: 10, Upstream: 10}
	if len(h) != 1 || h[0] != want {
		t.Errorf("history (-want +got):\n- [%+v]\n+ %+v", want, h)
	}
	if n := len(snaps[1].Fleet); n != 2 {
		t.Errorf("fleet (-want +got): -2 +%d", n)
	}
	v, _ := c.View("m")
	// Two instances for 2 s at $3.6/h = $0.004.
	if v.ArrivalRate != 25 || v.InstanceSeconds != 4 || fmt.Sprintf("%.6f", v.CostUSD) != "0.004000" {
		t.Errorf("view = %+v, want arrival 25/s, 4 instance-seconds, $0.004", v)
	}
	// Step 3: terminate three; Min 1 keeps one; the unknown m-3 is never reached.
	if err := c.Step(ctx, t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if want := []string{"m-1"}; !slices.Equal(p.terminated, want) || !slices.Equal(g.removed, want) {
		t.Errorf("terminated %v, drained %v; want %v drained then terminated", p.terminated, g.removed, want)
	}
	line := c.Timeline("m")
	if len(line) != 3 || line[0].Launching != 2 || line[1].Ready != 2 || line[2].Draining != 1 {
		t.Errorf("timeline = %+v", line)
	}
}

func TestInstancesMarksDraining(t *testing.T) {
	p, g := newFakeProvider(), &fakeGateway{}
	block := make(chan struct{})
	gw := &blockingGateway{fakeGateway: g, block: block}
	sc := autoscale.ScalerFunc(func(s autoscale.Snapshot, now time.Time) autoscale.Decision {
		return autoscale.Decision{Terminate: []string{"m-1"}}
	})
	p.Launch(context.Background(), provider.Spec{Model: "m"})
	p.Launch(context.Background(), provider.Spec{Model: "m"})
	c, _ := New(p, gw, (&counter{}).read, []Model{{Name: "m", Scaler: sc, Min: 1}}, Options{})
	if err := c.Step(context.Background(), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	insts, _ := c.Instances(context.Background())
	states := map[string]provider.State{}
	for _, in := range insts {
		states[in.ID] = in.State
	}
	if states["m-1"] != provider.StateDraining || states["m-2"] != provider.StateReady {
		t.Errorf("states = %v, want m-1 draining while its drain is in progress", states)
	}
	if slices.Contains(g.synced, "m-1") {
		t.Errorf("the gateway was synced with the draining m-1: %v", g.synced)
	}
	close(block)
	c.Wait()
}

type blockingGateway struct {
	*fakeGateway
	block chan struct{}
}

func (g *blockingGateway) RemoveInstance(ctx context.Context, model, id string) error {
	<-g.block
	return g.fakeGateway.RemoveInstance(ctx, model, id)
}

// TestMarkScalesUpAndDown drives the live MArk scaler (the simulator's) through the controller on
// a virtual clock: 40 req/s, then 400 req/s, then 40 req/s again, with instances of 100 req/s.
func TestMarkScalesUpAndDown(t *testing.T) {
	cfg := config.Default()
	cfg.Controller.Policy = config.ControllerMark
	cfg.Policies = policy.Sections{}
	if err := cfg.Policies.Set("mark", "{cool_down: 10s, headroom: 1.2}"); err != nil {
		t.Fatal(err)
	}
	m := config.DefaultModel("m")
	m.InstanceType.RPS = 100
	curve, err := LocalCurve(100, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := NewModel(cfg, m, curve, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	p, g, cnt := newFakeProvider(), &fakeGateway{}, &counter{}
	p.Launch(context.Background(), provider.Spec{Model: "m", Type: "local"})
	c, err := New(p, g, cnt.read, []Model{cm}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(0, 0)
	peak := 0
	var counts []int
	for s := 0; s <= 120; s++ {
		rate := 40
		if s >= 30 && s < 60 {
			rate = 400
		}
		cnt.r.Arrivals += int64(rate)
		cnt.r.Completed += int64(rate)
		if err := c.Step(context.Background(), t0.Add(time.Duration(s)*time.Second)); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		peak = max(peak, len(p.insts))
		counts = append(counts, len(p.insts))
	}
	// 400 req/s × headroom 1.2 at 100 req/s per instance: 5 instances at the peak.
	if peak < 5 {
		t.Errorf("peak instances = %d, want ≥ 5 (400 req/s at 100 each, headroom 1.2); counts %v", peak, counts)
	}
	if end := counts[len(counts)-1]; end > 2 {
		t.Errorf("instances at the end = %d, want ≤ 2 after the load fell back to 40 req/s; counts %v", end, counts)
	}
	v, _ := c.View("m")
	if !v.HasForecast || v.Horizon != cfg.Controller.Unit {
		t.Errorf("view has no forecast: %+v", v)
	}
}

func BenchmarkStepMark(b *testing.B) {
	cfg := config.Default()
	cfg.Controller.Policy = config.ControllerMark
	m := config.DefaultModel("m")
	curve, _ := LocalCurve(100, 1, 0)
	cm, err := NewModel(cfg, m, curve, time.Unix(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	p, g, cnt := newFakeProvider(), &fakeGateway{}, &counter{}
	for range 4 {
		p.Launch(context.Background(), provider.Spec{Model: "m", Type: "local"})
	}
	cm.Min, cm.Max = 4, 4
	c, _ := New(p, g, cnt.read, []Model{cm}, Options{})
	now := time.Unix(0, 0)
	for b.Loop() {
		cnt.r.Arrivals += 200
		cnt.r.Completed += 200
		now = now.Add(time.Second)
		c.Step(context.Background(), now)
	}
}

// TestNewModelSpotType: every model policy builds live for an instance type on the spot market
// ("c5.large/spot"), as the Kubernetes e2e suite configures one.
func TestNewModelSpotType(t *testing.T) {
	for _, p := range []string{"none", "fixed", "target-tracking", "knative", "mark", "sloserve"} {
		cfg := config.Default()
		cfg.Controller.Policy = p
		m := config.DefaultModel("m")
		m.InstanceType.Name, m.InstanceType.RPS = "c5.large/spot", 100
		curve, err := LocalCurve(100, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewModel(cfg, m, curve, time.Unix(0, 0)); err != nil {
			t.Errorf("policy %s on c5.large/spot: %v", p, err)
		}
	}
}

// TestGridRoundsWakeUps: a step woken a little early or late is given its tick's instant, so
// that "now + n periods" lands on a tick again (MArk's plan every unit did not on jitter).
func TestGridRoundsWakeUps(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, c := range []struct {
		late time.Duration
		k    int64
	}{{0, 0}, {2*time.Second - time.Millisecond, 2}, {2*time.Second + 3*time.Millisecond, 2}, {2600 * time.Millisecond, 3}} {
		k, at := Grid(start, start.Add(c.late), time.Second)
		if k != c.k || !at.Equal(start.Add(time.Duration(c.k)*time.Second)) {
			t.Errorf("Grid(+%v) = %d, %v; want %d", c.late, k, at, c.k)
		}
	}
}
