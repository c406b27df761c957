package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// limitBackend is a fakeBackend in front of workers that enforce their own concurrency, as
// `sloserve worker --max-in-flight` does: a batch beyond limit in flight on an address is
// answered 429 at once. Several gateways sharing it are replicas sharing the same workers.
type limitBackend struct {
	*fakeBackend
	limit int

	mu       sync.Mutex
	inFlight map[string]int
	peak     map[string]int
	refused  int
}

func (l *limitBackend) Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	l.mu.Lock()
	if l.inFlight == nil {
		l.inFlight, l.peak = map[string]int{}, map[string]int{}
	}
	if l.inFlight[addr] >= l.limit {
		l.refused++
		l.mu.Unlock()
		return nil, &oip.StatusError{Code: http.StatusTooManyRequests, Message: "overloaded", RetryAfter: time.Second}
	}
	l.inFlight[addr]++
	l.peak[addr] = max(l.peak[addr], l.inFlight[addr])
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.inFlight[addr]--
		l.mu.Unlock()
	}()
	return l.fakeBackend.Infer(ctx, addr, model, reqs)
}

// Two gateway replicas, each believing it has both instances' slots to itself, send to workers
// that take 2 batches each: the workers' 429s are bounced to the other instance (or back after a
// short back-off), so every request is answered 200 and no worker ever runs more than its limit.
// Without the bounce, each 429 reaches the client as a 503.
func TestReplicasShareInstanceSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lb := &limitBackend{fakeBackend: &fakeBackend{service: func(n int) time.Duration { return 4*time.Millisecond + time.Duration(n)*time.Millisecond }}, limit: 2}
		var gs [2]*Gateway
		for i := range gs {
			gs[i] = newReplica(t, lb, &fixedPolicy{Max: 4, Wait: time.Millisecond}, time.Second, 2, 2)
		}
		var wait [2]func() []answer
		for round := range 5 {
			for i, g := range gs {
				wait[i] = fire(g, 24, 0)
			}
			for i := range gs {
				for _, a := range wait[i]() {
					if a.Err != "" {
						t.Errorf("round %d, replica %d, request %s: %s", round, i, a.ID, a.Err)
					}
				}
			}
		}
		if lb.refused == 0 {
			t.Errorf("no batch was refused: the replicas never contended for a slot (test too weak)")
		}
		for addr, p := range lb.peak {
			if p > lb.limit {
				t.Errorf("instance %s ran %d batches at once, limit %d", addr, p, lb.limit)
			}
		}
		for _, g := range gs {
			g.Close(context.Background())
		}
	})
}

// An instance that refuses every batch as busy makes the gateway answer 429 (retry later) after
// a bounded number of bounces, or as soon as the deadline leaves no time for the batch: never a
// 5xx, never a request held until its deadline.
func TestBusyInstanceAnswers429(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold time.Duration
		within    time.Duration
	}{
		{"long deadline: after the bounces", 10 * time.Second, time.Second},
		{"short deadline: before it passes", 20 * time.Millisecond, 20 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lb := &limitBackend{fakeBackend: &fakeBackend{}, limit: 0}
				g := newFaultGateway(t, lb, &fixedPolicy{Max: 1, Wait: 0}, tc.threshold, 1)
				start := time.Now()
				_, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("r", 1), Arrival: start})
				if !errors.Is(err, ErrInstancesBusy) || oip.StatusOf(err) != http.StatusTooManyRequests {
					t.Fatalf("answer of an always-busy instance: %v (status %d), want ErrInstancesBusy (429)", err, oip.StatusOf(err))
				}
				if d := time.Since(start); d >= tc.within {
					t.Errorf("answered after %v, want within %v", d, tc.within)
				}
				if lb.refused < 2 {
					t.Errorf("refused %d times, want the batch bounced more than once", lb.refused)
				}
				g.Close(context.Background())
			})
		})
	}
}

// newReplica is one gateway replica of model m with instances a0..a{n-1} of slots slots each.
func newReplica(t *testing.T, b Backend, pol *fixedPolicy, threshold time.Duration, n, slots int) *Gateway {
	t.Helper()
	g, err := New(Options{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: slo.Spec{Threshold: threshold, Target: 0.98}, Policy: pol, QueueLimit: 256, Slots: slots}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := g.AddInstance(context.Background(), "m", Instance{ID: fmt.Sprintf("i%d", i), Addr: fmt.Sprintf("a%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// Every batch a worker refuses as busy is counted in sloserve_batch_bounces_total and its
// back-off observed in sloserve_busy_backoff_seconds, within [1 ms, 50 ms].
func TestBounceMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lb := &limitBackend{fakeBackend: &fakeBackend{}, limit: 0}
		reg := prometheus.NewRegistry()
		g, err := New(Options{Backend: lb, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.AddModel(Model{Name: "m", SLO: slo.Spec{Threshold: 10 * time.Second, Target: 0.98}, Policy: &fixedPolicy{Max: 1}, QueueLimit: 16, Slots: 1}); err != nil {
			t.Fatal(err)
		}
		if err := g.AddInstance(context.Background(), "m", Instance{ID: "i0", Addr: "a0"}); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Infer(context.Background(), &oip.Call{Model: "m", Request: request("r", 1), Arrival: time.Now()}); !errors.Is(err, ErrInstancesBusy) {
			t.Fatalf("answer of an always-busy instance: %v, want ErrInstancesBusy", err)
		}
		g.Close(context.Background())
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var bounces float64
		var backoffs uint64
		var sum float64
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "sloserve_batch_bounces_total":
					bounces += m.GetCounter().GetValue()
				case "sloserve_busy_backoff_seconds":
					backoffs += m.GetHistogram().GetSampleCount()
					sum += m.GetHistogram().GetSampleSum()
				}
			}
		}
		if bounces != float64(lb.refused) || lb.refused < 2 {
			t.Errorf("sloserve_batch_bounces_total %v, want the %d refusals (≥ 2)", bounces, lb.refused)
		}
		if backoffs != uint64(lb.refused) {
			t.Errorf("sloserve_busy_backoff_seconds count %d, want %d", backoffs, lb.refused)
		}
		if mean := sum / float64(max(backoffs, 1)); mean < 0.001 || mean > 0.05 {
			t.Errorf("mean back-off %vs, want within [1 ms, 50 ms]", mean)
		}
	})
}
