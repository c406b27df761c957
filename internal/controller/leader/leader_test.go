package leader

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sloserve/sloserve/internal/controller/leader/leadertest"
)

// TestFailover: of three electors on one Lease exactly one leads at a time; when the leader's
// context ends it releases the Lease and another takes over, and two terms never overlap.
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
	// The old leader released the Lease before its Run returned (no wall-clock bound: a loaded
	// machine stretches any): the record names no holder, or already a follower, which
	// Decide lets acquire a released Lease at once ("released: take it at once").
	held, err := cs.CoordinationV1().Leases("ns").Get(context.Background(), "lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := held.Spec.HolderIdentity; h != nil && *h == first.e.cfg.Identity {
		t.Errorf("after its Run returned the old leader %s still holds the Lease: not released", *h)
	}
	wait("a second leader", func() bool { l := leader(); return l != nil && l != first })
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

// TestTakeoverWithinLease: the leader's writes stop reaching the API server (as after a SIGKILL,
// but the process keeps running): it steps down, then a follower driven by its watch of the Lease
// takes over — never before the lease could have run out, never while the old one leads. The
// times are logged, not asserted (wall-clock bounds flake under -race on a loaded machine): the
// e2e failover measures them and Decide's tests bound them on a fake clock.
func TestTakeoverWithinLease(t *testing.T) {
	const lease, renew, retry = 800 * time.Millisecond, 500 * time.Millisecond, 100 * time.Millisecond
	cs := leadertest.Clientset()
	var victim atomic.Value
	victim.Store("")
	cs.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, ok := a.(interface{ GetObject() runtime.Object })
		if !ok || (a.GetVerb() != "update" && a.GetVerb() != "create") {
			return false, nil, nil
		}
		if h := obj.GetObject().(*coordinationv1.Lease).Spec.HolderIdentity; h != nil && *h == victim.Load().(string) {
			return true, nil, apierrors.NewServiceUnavailable("partitioned")
		}
		return false, nil, nil
	})
	var es []*Elector
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, id := range []string{"a", "b", "c"} {
		e, err := New(Config{Client: cs, Namespace: "ns", Name: "lease", Identity: id, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
		wg.Add(1)
		go func() { defer wg.Done(); _ = e.Run(ctx, func(lctx context.Context) { <-lctx.Done() }) }()
	}
	leader := func() *Elector {
		var l *Elector
		for _, e := range es {
			if e.IsLeader() {
				if l != nil {
					t.Fatalf("%s and %s lead at once", l.cfg.Identity, e.cfg.Identity)
				}
				l = e
			}
		}
		return l
	}
	deadline := time.Now().Add(10 * time.Second)
	for leader() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no first leader within 10 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	first := leader()
	time.Sleep(3*retry + retry/2) // a few renewals; the partition falls between two
	victim.Store(first.cfg.Identity)
	cut := time.Now()
	var stepped time.Duration
	for {
		l := leader()
		if l == nil && stepped == 0 {
			stepped = time.Since(cut)
		}
		if l != nil && l != first {
			break
		}
		if time.Since(cut) > 10*time.Second {
			t.Fatal("no new leader within 10 s of the partition")
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(cut)
	t.Logf("old leader stepped down %v after the partition, new leader %s after %v (lease %v, retry %v)", stepped, leader().cfg.Identity, took, lease, retry)
	// Safety, not speed (how fast is measured by the e2e failover on the control plane, and
	// Decide's property tests bound it on a fake clock): the old leader stepped down before the
	// new one took over, and nobody took over before the lease could have run out.
	if stepped == 0 || stepped > took {
		t.Errorf("old leader stepped down %v after the partition, new leader after %v: want the step-down first", stepped, took)
	}
	if took < lease-retry-50*time.Millisecond {
		t.Errorf("new leader %v after the partition, want no earlier than lease − retry − 50 ms = %v", took, lease-retry-50*time.Millisecond)
	}
}
