package leader

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sloserve/sloserve/internal/controller/leader/leadertest"
)

// TestFailover: of three electors on one Lease exactly one leads at a time; when the leader's
// context ends (it releases the Lease) another takes over within a lease duration, and two terms
// never overlap.
func TestFailover(t *testing.T) {
	cs := leadertest.Clientset()
	var leading atomic.Int32
	var overlap atomic.Bool
	type member struct {
		e      *Elector
		cancel context.CancelFunc
		done   chan struct{}
	}
	var ms []*member
	var mu sync.Mutex
	leads := map[string]int{}
	for _, id := range []string{"a", "b", "c"} {
		e, err := New(Config{Client: cs, Namespace: "ns", Name: "lease", Identity: id,
			LeaseDuration: 800 * time.Millisecond, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{e: e, cancel: cancel, done: make(chan struct{})}
		ms = append(ms, m)
		go func() {
			defer close(m.done)
			_ = e.Run(ctx, func(lctx context.Context) {
				if leading.Add(1) > 1 {
					overlap.Store(true)
				}
				mu.Lock()
				leads[id]++
				mu.Unlock()
				<-lctx.Done()
				leading.Add(-1)
			})
		}()
	}
	defer func() {
		for _, m := range ms {
			m.cancel()
			<-m.done
		}
	}()
	leader := func() *member {
		var l *member
		n := 0
		for _, m := range ms {
			if m.e.IsLeader() {
				l, n = m, n+1
			}
		}
		if n > 1 {
			t.Fatalf("%d leaders at once", n)
		}
		return l
	}
	wait := func(what string, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > 10*time.Second {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	wait("a first leader", func() bool { return leader() != nil })
	first := leader()
	first.cancel()
	<-first.done
	took := wait("a second leader", func() bool { l := leader(); return l != nil && l != first })
	if took > 800*time.Millisecond {
		t.Errorf("new leader after %v, want within the lease duration 800ms (the old one released it)", took)
	}
	second := leader()
	lease, err := cs.CoordinationV1().Leases("ns").Get(context.Background(), "lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != second.e.cfg.Identity {
		t.Errorf("Lease holder %v, want %s", h, second.e.cfg.Identity)
	}
	for _, m := range ms {
		if m != first {
			wait("followers to see the new holder", func() bool { return m.e.Holder() == second.e.cfg.Identity })
		}
	}
	if overlap.Load() {
		t.Error("two terms overlapped")
	}
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, n := range leads {
		total += n
	}
	if total != 2 {
		t.Errorf("terms %v, want 2 in all", leads)
	}
}

func TestNewRefusesBadTimings(t *testing.T) {
	_, err := New(Config{Client: fake.NewClientset(), Namespace: "ns", Name: "l", Identity: "a",
		LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 100 * time.Millisecond})
	if err == nil {
		t.Error("New accepted a renew deadline above the lease duration")
	}
}
