package functions

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/keepalive"
)

// gatedRuntime's instances become ready when the test closes gate; fail makes Start fail.
type gatedRuntime struct {
	gate chan struct{}
	fail error

	mu      sync.Mutex
	n       int
	stopped []string
}

func (r *gatedRuntime) Start(context.Context, string, int) (string, string, error) {
	<-r.gate
	if r.fail != nil {
		return "", "", r.fail
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	return "i" + string(rune('0'+r.n)), "addr", nil
}
func (r *gatedRuntime) Addr(context.Context, string) (string, error) { return "addr", nil }
func (r *gatedRuntime) Stop(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = append(r.stopped, id)
	return nil
}
func (r *gatedRuntime) Enforcement() string { return "none" }
func (r *gatedRuntime) Close() error        { return nil }

func newTier(t *testing.T, rt Runtime) *Tier {
	t.Helper()
	f, err := New(Config{Tier: cost.DefaultCatalog().Serverless, MaxInstances: 1, ReapEvery: time.Hour,
		KeepAlive: func() keepalive.Policy { return &keepalive.Fixed{KeepAlive: time.Hour} }}, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func noop(context.Context, string) error { return nil }

// TestColdStartOutlivesCaller: a caller whose context ends during the cold start gets an error,
// but the instance, once ready, is idle in the pool (the next call is warm); a cold start that
// fails frees its place; one that ends after Close is stopped.
func TestColdStartOutlivesCaller(t *testing.T) {
	rt := &gatedRuntime{gate: make(chan struct{})}
	f := newTier(t, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if _, err := f.Invoke(ctx, "m", 1769, noop); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call during the cold start: %v, want its deadline", err)
	}
	cancel()
	close(rt.gate)
	inv, err := f.Invoke(context.Background(), "m", 1769, noop)
	if err != nil || inv.Cold || inv.Instance != "i1" {
		t.Errorf("next call: %+v, %v; want warm on i1", inv, err)
	}
	if s := f.Stats("m"); s.ColdStarts != 1 || s.Live != 1 || s.Invocations != 1 || s.AfterColdStart != 0 {
		t.Errorf("stats %+v; want 1 cold start, 1 live, 1 invocation", s)
	}
	f.Close()

	bad := &gatedRuntime{gate: make(chan struct{}), fail: errors.New("no capacity")}
	close(bad.gate)
	g := newTier(t, bad)
	defer g.Close()
	for range 2 { // the failed start frees the pool's one place
		if _, err := g.Invoke(context.Background(), "m", 1769, noop); err == nil {
			t.Fatal("invocation on a failing runtime succeeded")
		}
	}

	late := &gatedRuntime{gate: make(chan struct{})}
	h := newTier(t, late)
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h.Invoke(ctx, "m", 1769, noop)
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	<-done
	h.Close()
	close(late.gate)
	deadline := time.Now().Add(5 * time.Second)
	for {
		late.mu.Lock()
		n := len(late.stopped)
		late.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("an instance ready after Close was not stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
