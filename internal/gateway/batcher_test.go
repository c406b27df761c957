package gateway

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// newTestGateway returns a gateway serving model "m" with the given policy over backend fb,
// with the given instances (addresses "a0", "a1", ...).
func newTestGateway(t *testing.T, fb *fakeBackend, pol *fixedPolicy, threshold time.Duration, limit int, instances int) *Gateway {
	t.Helper()
	g, err := New(Options{Backend: fb})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: slo.Spec{Threshold: threshold, Target: 0.98}, Policy: pol, QueueLimit: limit}); err != nil {
		t.Fatal(err)
	}
	for i := range instances {
		if err := g.AddInstance(context.Background(), "m", Instance{ID: fmt.Sprintf("i%d", i), Addr: fmt.Sprintf("a%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// answer is what one client saw, with the virtual time it took.
type answer struct {
	ID      string
	Latency time.Duration
	Err     string
	Batch   int
}

// fire submits n requests at the current virtual instant (with the per-request timeout override
// when non-zero) and returns a function that waits for all answers, in submission order.
func fire(g *Gateway, n int, timeout time.Duration) func() []answer {
	out := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			id := fmt.Sprintf("r%d", i)
			resp, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request(id, 1), Arrival: start, SLO: oip.RequestSLO{Timeout: timeout}})
			a := answer{ID: id, Latency: time.Since(start)}
			if err != nil {
				a.Err = err.Error()
			} else {
				a.Batch = resp.Parameters[ParamBatchSize].(int)
				if resp.ID != id {
					a.Err = "answer for " + resp.ID
				}
			}
			out[i] = a
		}()
		synctest.Wait() // arrivals in order
	}
	return func() []answer { wg.Wait(); return out }
}

func TestBatcherTiming(t *testing.T) {
	service := func(n int) time.Duration { return 5*time.Millisecond + time.Duration(n)*time.Millisecond }
	tests := []struct {
		name      string
		max       int
		wait      time.Duration
		threshold time.Duration
		instances int
		n         int
		timeout   time.Duration
		want      []answer
	}{
		{
			name: "lone request waits the full window", max: 4, wait: 10 * time.Millisecond,
			threshold: time.Second, instances: 1, n: 1,
			want: []answer{{ID: "r0", Latency: 16 * time.Millisecond, Batch: 1}},
		},
		{
			name: "full batch leaves at once", max: 2, wait: 10 * time.Millisecond,
			threshold: time.Second, instances: 1, n: 2,
			want: []answer{{ID: "r0", Latency: 7 * time.Millisecond, Batch: 2}, {ID: "r1", Latency: 7 * time.Millisecond, Batch: 2}},
		},
		{
			name: "third request queues behind the busy instance", max: 2, wait: 10 * time.Millisecond,
			threshold: time.Second, instances: 1, n: 3,
			// r0,r1 dispatched at 0 (done at 7ms); r2's window ends at 10ms, slot free: 10+6.
			want: []answer{{ID: "r0", Latency: 7 * time.Millisecond, Batch: 2}, {ID: "r1", Latency: 7 * time.Millisecond, Batch: 2},
				{ID: "r2", Latency: 16 * time.Millisecond, Batch: 1}},
		},
		{
			name: "two instances take two batches at once", max: 1, wait: 0,
			threshold: time.Second, instances: 2, n: 3,
			want: []answer{{ID: "r0", Latency: 6 * time.Millisecond, Batch: 1}, {ID: "r1", Latency: 6 * time.Millisecond, Batch: 1},
				{ID: "r2", Latency: 12 * time.Millisecond, Batch: 1}},
		},
		{
			name: "no instance: 504 exactly at the SLO deadline", max: 4, wait: time.Millisecond,
			threshold: 200 * time.Millisecond, instances: 0, n: 1,
			want: []answer{{ID: "r0", Latency: 200 * time.Millisecond, Err: "gateway: deadline exceeded before dispatch: waited 200ms"}},
		},
		{
			name: "parameters.timeout overrides the SLO deadline", max: 4, wait: time.Millisecond,
			threshold: 200 * time.Millisecond, instances: 0, n: 1, timeout: 3 * time.Millisecond,
			want: []answer{{ID: "r0", Latency: 3 * time.Millisecond, Err: "gateway: deadline exceeded before dispatch: waited 3ms"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fb := &fakeBackend{service: service}
				pol := &fixedPolicy{Max: tc.max, Wait: tc.wait}
				g := newTestGateway(t, fb, pol, tc.threshold, 16, tc.instances)
				got := fire(g, tc.n, tc.timeout)()
				if diff := diff(tc.want, got); diff != "" {
					t.Errorf("answers (-want +got):\n%s", diff)
				}
				if _, err := g.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

func TestBatcherObservesOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(n int) time.Duration { return 4 * time.Millisecond }}
		pol := &fixedPolicy{Max: 3, Wait: 2 * time.Millisecond}
		g := newTestGateway(t, fb, pol, time.Second, 16, 1)
		t0 := time.Now()
		fire(g, 3, 0)()
		synctest.Wait()
		if _, err := g.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := []struct {
			Size                  int
			Dispatched, Completed time.Duration
		}{{3, 0, 4 * time.Millisecond}}
		var got []struct {
			Size                  int
			Dispatched, Completed time.Duration
		}
		for _, o := range pol.Observed {
			got = append(got, struct {
				Size                  int
				Dispatched, Completed time.Duration
			}{o.Size, o.Dispatched.Sub(t0), o.Completed.Sub(t0)})
		}
		if diff := diff(want, got); diff != "" {
			t.Errorf("observed outcomes (-want +got):\n%s", diff)
		}
	})
}

func TestQueueFullRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{}
		pol := &fixedPolicy{Max: 8, Wait: 50 * time.Millisecond}
		g := newTestGateway(t, fb, pol, time.Second, 2, 1)
		got := fire(g, 3, 0)()
		want := []answer{
			{ID: "r0", Latency: 51 * time.Millisecond, Batch: 2},
			{ID: "r1", Latency: 51 * time.Millisecond, Batch: 2},
			{ID: "r2", Latency: 0, Err: ErrQueueFull.Error()},
		}
		if diff := diff(want, got); diff != "" {
			t.Errorf("answers (-want +got):\n%s", diff)
		}
		g.Close(context.Background())
	})
}

func TestCloseFailsPendingAndDrainsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 30 * time.Millisecond }}
		pol := &fixedPolicy{Max: 1, Wait: 0}
		g := newTestGateway(t, fb, pol, time.Second, 16, 1)
		wait := fire(g, 3, 0) // r0 in flight, r1 and r2 waiting
		start := time.Now()
		failed, err := g.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if failed != 2 {
			t.Errorf("Close failed %d pending requests, want 2", failed)
		}
		if d := time.Since(start); d != 30*time.Millisecond {
			t.Errorf("Close took %v, want 30ms (the batch in flight)", d)
		}
		got := wait()
		want := []answer{
			{ID: "r0", Latency: 30 * time.Millisecond, Batch: 1},
			{ID: "r1", Err: ErrShuttingDown.Error()},
			{ID: "r2", Err: ErrShuttingDown.Error()},
		}
		if diff := diff(want, got); diff != "" {
			t.Errorf("answers (-want +got):\n%s", diff)
		}
		if _, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("late", 1)}); !errors.Is(err, ErrShuttingDown) {
			t.Errorf("Infer after Close: got %v, want ErrShuttingDown", err)
		}
	})
}

func TestRemoveInstanceDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 10 * time.Millisecond }}
		pol := &fixedPolicy{Max: 1, Wait: 0}
		g := newTestGateway(t, fb, pol, time.Second, 16, 2)
		wait := fire(g, 2, 0) // one batch on each instance
		start := time.Now()
		if err := g.RemoveInstance(context.Background(), "m", "i0"); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 10*time.Millisecond {
			t.Errorf("RemoveInstance took %v, want 10ms (its batch in flight)", d)
		}
		ids, _ := g.Instances("m")
		if diff := diff([]string{"i1"}, ids); diff != "" {
			t.Errorf("instances (-want +got):\n%s", diff)
		}
		for _, a := range wait() {
			if a.Err != "" {
				t.Errorf("request %s failed during drain: %s", a.ID, a.Err)
			}
		}
		// Later requests go to the remaining instance only.
		fire(g, 2, 0)()
		if got := fb.sizes("a0"); len(got) != 1 {
			t.Errorf("drained instance got %d batches, want 1", len(got))
		}
		if err := g.RemoveInstance(context.Background(), "m", "nope"); err == nil {
			t.Error("RemoveInstance of an unknown id: got nil error")
		}
		g.Close(context.Background())
	})
}

func TestAddInstanceLate(t *testing.T) {
	// A request waiting with no instance is served as soon as one is added.
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 5 * time.Millisecond }}
		pol := &fixedPolicy{Max: 1}
		g := newTestGateway(t, fb, pol, time.Second, 16, 0)
		wait := fire(g, 1, 0)
		time.Sleep(20 * time.Millisecond)
		if err := g.AddInstance(context.Background(), "m", Instance{ID: "late", Addr: "late"}); err != nil {
			t.Fatal(err)
		}
		want := []answer{{ID: "r0", Latency: 25 * time.Millisecond, Batch: 1}}
		if diff := diff(want, wait()); diff != "" {
			t.Errorf("answers (-want +got):\n%s", diff)
		}
		g.Close(context.Background())
	})
}

func TestBackendErrorAnswersEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{err: &oip.StatusError{Code: 500, Message: "boom"}}
		pol := &fixedPolicy{Max: 2, Wait: time.Millisecond}
		g := newTestGateway(t, fb, pol, time.Second, 16, 1)
		got := fire(g, 2, 0)()
		for _, a := range got {
			if a.Err != "gateway: backend failed (instance answered HTTP 500)" {
				t.Errorf("request %s: got error %q, want the generic 502 text", a.ID, a.Err)
			}
		}
		g.Close(context.Background())
		if len(pol.Observed) != 1 || !pol.Observed[0].Failed {
			t.Errorf("policy observed %+v, want one failed batch", pol.Observed)
		}
	})
}

func TestSyncFollowsProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 10 * time.Millisecond }}
		g := newTestGateway(t, fb, &fixedPolicy{Max: 1}, time.Second, 16, 0)
		ctx := context.Background()
		inst := func(id, addr string, st provider.State) provider.Instance {
			return provider.Instance{ID: id, Addr: addr, State: st, Spec: provider.Spec{Model: "m"}}
		}
		steps := []struct {
			name  string
			insts []provider.Instance
			want  []Instance
		}{
			{"launching is ignored", []provider.Instance{inst("a", "", provider.StateLaunching)}, nil},
			{"ready is added", []provider.Instance{inst("a", "x1", provider.StateReady)},
				[]Instance{{ID: "a", Addr: "x1", Slots: 1}}},
			{"other model is ignored", []provider.Instance{inst("a", "x1", provider.StateReady),
				{ID: "z", Addr: "z", State: provider.StateReady, Spec: provider.Spec{Model: "other"}}},
				[]Instance{{ID: "a", Addr: "x1", Slots: 1}}},
			{"restart on a new address replaces", []provider.Instance{inst("a", "x2", provider.StateReady)},
				[]Instance{{ID: "a", Addr: "x2", Slots: 1}}},
			{"gone is drained", nil, nil},
		}
		for _, s := range steps {
			if err := g.Sync(ctx, s.insts); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			b, _ := g.batcher("m")
			got, _ := b.list()
			if d := diff(s.want, got); d != "" {
				t.Errorf("%s: instances (-want +got):\n%s", s.name, d)
			}
		}
		g.Close(ctx)
	})
}

// TestNonePolicyHoldsWhileBusy drives the real none policy, which asks to be called again "now"
// while requests wait: with the only slot busy, the batcher must wait for the completion (and
// not spin), then serve the queue one by one.
func TestNonePolicyHoldsWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 5 * time.Millisecond }}
		g, err := New(Options{Backend: fb})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: batching.NewNone()}); err != nil {
			t.Fatal(err)
		}
		g.AddInstance(context.Background(), "m", Instance{ID: "i", Addr: "a"})
		got := fire(g, 3, 0)()
		want := []answer{{ID: "r0", Latency: 5 * time.Millisecond, Batch: 1}, {ID: "r1", Latency: 10 * time.Millisecond, Batch: 1},
			{ID: "r2", Latency: 15 * time.Millisecond, Batch: 1}}
		if d := diff(want, got); d != "" {
			t.Errorf("answers (-want +got):\n%s", d)
		}
		g.Close(context.Background())
	})
}

// TestDepartedClientLeavesTheQueue: a client that gives up while its request waits gets its
// context error, its request is not sent, and the others are served.
func TestDepartedClientLeavesTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return time.Millisecond }}
		g := newTestGateway(t, fb, &fixedPolicy{Max: 2, Wait: 10 * time.Millisecond}, time.Second, 16, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := g.Infer(ctx, &oip.Call{Model: "m", Request: request("gone", 1), Arrival: time.Now()})
			errc <- err
		}()
		time.Sleep(6 * time.Millisecond) // the client has gone at 5 ms
		got := fire(g, 1, 0)()
		if err := <-errc; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("departed client: got %v, want its context error", err)
		}
		want := []answer{{ID: "r0", Latency: 11 * time.Millisecond, Batch: 1}}
		if d := diff(want, got); d != "" {
			t.Errorf("answers (-want +got):\n%s", d)
		}
		g.Close(context.Background())
		if sizes := fb.sizes("a0"); !reflect.DeepEqual(sizes, []int{1}) {
			t.Errorf("batches sent (-want +got): -[1] +%v", sizes)
		}
	})
}

// TestNoHeadOfLineBlockingAcrossModels: a model whose instance is slow does not delay another.
func TestNoHeadOfLineBlockingAcrossModels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return time.Millisecond }, slow: map[string]time.Duration{"slow": 100 * time.Millisecond}}
		g, _ := New(Options{Backend: fb})
		ctx := context.Background()
		for _, name := range []string{"slow", "fast"} {
			if err := g.AddModel(Model{Name: name, SLO: slo.DefaultSpec(), Policy: batching.NewNone(), Metadata: testMetadata()}); err != nil {
				t.Fatal(err)
			}
			g.AddInstance(ctx, name, Instance{ID: name, Addr: name})
		}
		lat := map[string]time.Duration{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, name := range []string{"slow", "slow", "fast", "fast"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				if _, err := g.Infer(ctx, &oip.Call{Model: name, Request: request(fmt.Sprint(i), 1), Arrival: start}); err != nil {
					t.Error(err)
				}
				mu.Lock()
				lat[fmt.Sprint(name, i)] = time.Since(start)
				mu.Unlock()
			}()
			synctest.Wait()
		}
		wg.Wait()
		want := map[string]time.Duration{"slow0": 101 * time.Millisecond, "slow1": 202 * time.Millisecond, "fast2": time.Millisecond, "fast3": 2 * time.Millisecond}
		if d := diff(want, lat); d != "" {
			t.Errorf("latencies (-want +got):\n%s", d)
		}
		g.Close(ctx)
	})
}

// TestUnreachableInstanceRetriesElsewhere: a batch whose instance refuses the connection goes
// to another instance; the refusing one takes no batch for a while. With no other instance
// the requests fail at once with 503.
func TestUnreachableInstanceRetriesElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := &fakeBackend{service: func(int) time.Duration { return 2 * time.Millisecond }, down: map[string]bool{"a0": true}}
		g := newTestGateway(t, fb, &fixedPolicy{Max: 2, Wait: time.Millisecond}, time.Second, 16, 2)
		got := fire(g, 2, 0)()
		want := []answer{{ID: "r0", Latency: 2 * time.Millisecond, Batch: 2}, {ID: "r1", Latency: 2 * time.Millisecond, Batch: 2}}
		if d := diff(want, got); d != "" {
			t.Errorf("answers (-want +got):\n%s", d)
		}
		fire(g, 2, 0)() // a0 is resting: straight to a1
		if d := diff([]int{2}, fb.sizes("a0")); d != "" {
			t.Errorf("batches sent to the refusing instance (-want +got):\n%s", d)
		}
		if d := diff([]int{2, 2}, fb.sizes("a1")); d != "" {
			t.Errorf("batches sent to the good instance (-want +got):\n%s", d)
		}
		g.RemoveInstance(context.Background(), "m", "i1")
		time.Sleep(2 * batcher.DownFor)
		got = fire(g, 1, 0)()
		if !strings.Contains(got[0].Err, "backend unavailable") || got[0].Latency != time.Millisecond {
			t.Errorf("only instance unreachable: got %+v, want backend unavailable right after the 1 ms window", got[0])
		}
		g.Close(context.Background())
	})
}

// fakeLister reports a scripted fleet.
type fakeLister struct {
	mu    sync.Mutex
	insts []provider.Instance
}

func (f *fakeLister) Instances(ctx context.Context) ([]provider.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]provider.Instance(nil), f.insts...), nil
}

func (f *fakeLister) set(insts ...provider.Instance) {
	f.mu.Lock()
	f.insts = insts
	f.mu.Unlock()
}

// TestWatchFollowsTheProviderEveryInterval: Watch syncs at once and then every interval.
func TestWatchFollowsTheProviderEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGateway(t, &fakeBackend{}, &fixedPolicy{Max: 1}, time.Second, 16, 0)
		fl := &fakeLister{}
		ready := provider.Instance{ID: "w", Addr: "x", State: provider.StateReady, Spec: provider.Spec{Model: "m"}}
		fl.set(ready)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- g.Watch(ctx, fl, 100*time.Millisecond, nil) }()
		synctest.Wait()
		if ids, _ := g.Instances("m"); !reflect.DeepEqual(ids, []string{"w"}) {
			t.Errorf("after the first sync (-want +got): -[w] +%v", ids)
		}
		fl.set()
		time.Sleep(99 * time.Millisecond)
		synctest.Wait()
		if ids, _ := g.Instances("m"); len(ids) != 1 {
			t.Errorf("before the interval: instances %v, want w still", ids)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if ids, _ := g.Instances("m"); len(ids) != 0 {
			t.Errorf("after the interval: instances %v, want none", ids)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
		g.Close(context.Background())
	})
}

// TestWatchSyncsOnPoke: a poke (a provider's ready event) makes Watch sync at once, not at the
// next interval, so that a ready instance takes batches as soon as its readiness check passes.
func TestWatchSyncsOnPoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGateway(t, &fakeBackend{}, &fixedPolicy{Max: 1}, time.Second, 16, 0)
		fl := &fakeLister{}
		poke := make(chan struct{}, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- g.Watch(ctx, fl, time.Hour, poke) }()
		synctest.Wait()
		if ids, _ := g.Instances("m"); len(ids) != 0 {
			t.Errorf("before any instance: %v, want none", ids)
		}
		fl.set(provider.Instance{ID: "w", Addr: "x", State: provider.StateReady, Spec: provider.Spec{Model: "m"}})
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if ids, _ := g.Instances("m"); len(ids) != 0 {
			t.Errorf("without a poke, an hour's interval: %v, want none yet", ids)
		}
		poke <- struct{}{}
		synctest.Wait()
		if ids, _ := g.Instances("m"); !reflect.DeepEqual(ids, []string{"w"}) {
			t.Errorf("after the poke (-want +got): -[w] +%v", ids)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v, want context.Canceled", err)
		}
		g.Close(context.Background())
	})
}

// TestRealPolicies drives the batching package's fixed and mlproxy policies through the
// runtime: the batcher adds nothing to their decisions.
func TestRealPolicies(t *testing.T) {
	service := func(n int) time.Duration { return 5*time.Millisecond + time.Duration(n)*time.Millisecond }
	ml := batching.DefaultConfig()
	ml.Policy = batching.PolicyMLProxy
	ml.MaxBatch = 4
	mlp, err := batching.New(ml)
	if err != nil {
		t.Fatal(err)
	}
	mlLone, _ := batching.New(ml)
	tests := []struct {
		name   string
		policy batching.Policy
		n      int
		want   []answer
	}{
		{"fixed: lone request waits W", batching.NewFixed(4, 10*time.Millisecond), 1,
			[]answer{{ID: "r0", Latency: 16 * time.Millisecond, Batch: 1}}},
		{"fixed: full batch at once", batching.NewFixed(2, 10*time.Millisecond), 2,
			[]answer{{ID: "r0", Latency: 7 * time.Millisecond, Batch: 2}, {ID: "r1", Latency: 7 * time.Millisecond, Batch: 2}}},
		{"mlproxy: Max_BS requests leave at once", mlp, 4, []answer{
			{ID: "r0", Latency: 9 * time.Millisecond, Batch: 4}, {ID: "r1", Latency: 9 * time.Millisecond, Batch: 4},
			{ID: "r2", Latency: 9 * time.Millisecond, Batch: 4}, {ID: "r3", Latency: 9 * time.Millisecond, Batch: 4}}},
		// MLProxy Eqs. 1–2 before any data: TO = (SLO − guard margin) − p95_no_data =
		// (200 − 40) − 100 ms = 60 ms after the arrival, then 6 ms of service.
		{"mlproxy: lone request leaves at its dispatch timeout", mlLone, 1,
			[]answer{{ID: "r0", Latency: 66 * time.Millisecond, Batch: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, _ := New(Options{Backend: &fakeBackend{service: service}})
				g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: tc.policy, Metadata: testMetadata()})
				g.AddInstance(context.Background(), "m", Instance{ID: "i", Addr: "a"})
				if d := diff(tc.want, fire(g, tc.n, 0)()); d != "" {
					t.Errorf("answers (-want +got):\n%s", d)
				}
				g.Close(context.Background())
			})
		})
	}
}

// TestOwnBatching: an instance with a MaxWait of its own (INFless's built-in batch queue per
// instance, placed by controller.INFless) takes its batch of b = MaxBatch from the model's queue
// when that many wait or the oldest has waited MaxWait — whatever the model's policy would do
// (here: dispatch every request at once) — and instances with different ⟨b, timeout⟩ batch
// side by side.
func TestOwnBatching(t *testing.T) {
	service := func(n int) time.Duration { return 5*time.Millisecond + time.Duration(n)*time.Millisecond }
	tests := []struct {
		name  string
		insts []Instance
		n     int
		want  []answer
	}{
		{"a lone request waits the instance's timeout", []Instance{{ID: "i0", Addr: "a0", MaxBatch: 4, MaxWait: 10 * time.Millisecond}}, 1,
			[]answer{{ID: "r0", Latency: 16 * time.Millisecond, Batch: 1}}},
		{"b requests leave at once", []Instance{{ID: "i0", Addr: "a0", MaxBatch: 4, MaxWait: 10 * time.Millisecond}}, 4,
			[]answer{{ID: "r0", Latency: 9 * time.Millisecond, Batch: 4}, {ID: "r1", Latency: 9 * time.Millisecond, Batch: 4},
				{ID: "r2", Latency: 9 * time.Millisecond, Batch: 4}, {ID: "r3", Latency: 9 * time.Millisecond, Batch: 4}}},
		{"non-uniform: b = 1 takes the first, b = 2 the next two", []Instance{
			{ID: "i0", Addr: "a0", MaxBatch: 2, MaxWait: 10 * time.Millisecond}, {ID: "i1", Addr: "a1", MaxBatch: 1, MaxWait: 10 * time.Millisecond}}, 3,
			[]answer{{ID: "r0", Latency: 6 * time.Millisecond, Batch: 1}, {ID: "r1", Latency: 7 * time.Millisecond, Batch: 2}, {ID: "r2", Latency: 7 * time.Millisecond, Batch: 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fb := &fakeBackend{service: service}
				g := newTestGateway(t, fb, &fixedPolicy{Max: 1, Wait: 0}, time.Second, 16, 0)
				for _, in := range tc.insts {
					if err := g.AddInstance(context.Background(), "m", in); err != nil {
						t.Fatal(err)
					}
				}
				got := fire(g, tc.n, 0)()
				if diff := diff(tc.want, got); diff != "" {
					t.Errorf("answers (-want +got):\n%s", diff)
				}
				if _, err := g.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
