package app

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sloserve/sloserve/internal/controller/leader/leadertest"
)

// freeAddrs returns n loopback host:ports free at the time of the call.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Addr().String())
		l.Close()
	}
	return out
}

// TestReplicasFailover runs three serving stacks (app.Start, as three `sloserve serve`
// replicas) with leader election on one fake cluster: exactly one leads, its controller alone
// launches the model's fleet (three pods, not nine), every replica becomes ready once it has the
// fleet view, the leader's facts count the requests a follower served, and when the leader goes
// a follower takes over within the lease duration and resumes from the pods in the cluster
// without launching a single one.
func TestReplicasFailover(t *testing.T) {
	worker := httptest.NewServer(fakeWorkerHandler())
	defer worker.Close()
	u, _ := url.Parse(worker.URL)
	port, _ := strconv.Atoi(u.Port())
	const ns = "serving"
	cs := leadertest.Clientset()
	var creates atomic.Int32
	cs.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates.Add(1)
		return false, nil, nil // the tracker stores it
	})
	kl := startKubelet(cs, ns)
	defer kl.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	addrs := freeAddrs(t, 3)
	var urls []string
	for _, a := range addrs {
		urls = append(urls, "http://"+a)
	}
	// A lease of seconds, not one: under -race beside make test's other packages, renewals of a
	// 1 s lease (700 ms deadline) missed and the replicas lost the lease before becoming ready.
	const lease = 3 * time.Second
	stacks := map[string]*Stack{}
	for i, id := range []string{"a", "b", "c"} {
		cfg := kubeStackConfig(ns, port, 3)
		// A wide SLO: the requests below check routing and counting, not latency (under -race on
		// a loaded machine a batch's round trip can exceed the default threshold).
		cfg.Models[0].SLO.Threshold, cfg.Models[0].SLO.ThresholdMS = 5*time.Second, 5000
		cfg.Gateway.Addr = addrs[i]
		le := &cfg.Controller.LeaderElection
		le.Enabled, le.Identity = true, id
		le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = lease, 2*time.Second, 200*time.Millisecond
		cfg.Controller.Peers.Static = urls
		st, err := Start(ctx, cfg, StackOptions{KubernetesClient: cs})
		if err != nil {
			t.Fatalf("Start %s: %v", id, err)
		}
		defer st.Close(context.Background())
		stacks[id] = st
	}
	leader := func() string {
		var ids []string
		for id, st := range stacks {
			if st.Elector.IsLeader() {
				ids = append(ids, id)
			}
		}
		if len(ids) > 1 {
			t.Fatalf("leaders %v at once", ids)
		}
		if len(ids) == 0 {
			return ""
		}
		return ids[0]
	}
	eventually(t, "one leader", 20*time.Second, func() bool { return leader() != "" })
	eventually(t, "three ready replicas with three instances each", 40*time.Second, func() bool {
		for _, st := range stacks {
			ids, _ := st.Gateway.Instances("m")
			if len(ids) != 3 || !st.Gateway.Ready(ctx) {
				return false
			}
		}
		return true
	})
	if n := creates.Load(); n != 3 {
		t.Fatalf("pods created: %d, want 3 (the leader's fleet, once)", n)
	}

	// The leader's facts cover a follower's traffic.
	first := leader()
	var follower string
	for id := range stacks {
		if id != first {
			follower = id
			break
		}
	}
	// A peer's first report is the leader's baseline, so requests the follower served before the
	// leader first reached it are not counted: keep sending until five are (bounded).
	sent := 0
	eventually(t, "the leader to count the follower's requests", 20*time.Second, func() bool {
		postOnes(t, stacks[follower].URL, 1)
		sent++
		return stacks[first].Fleet.Reading("m").Arrivals >= 5
	})
	t.Logf("the leader counted ≥ 5 of the %d requests the follower served", sent)
	resp, err := http.Get(stacks[follower].URL + "/internal/v1/facts")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /internal/v1/facts: %d", resp.StatusCode)
	}

	// The leader goes; a follower leads within the lease duration and launches nothing.
	start := time.Now()
	if _, err := stacks[first].Close(ctx); err != nil {
		t.Fatalf("close the leader: %v", err)
	}
	delete(stacks, first)
	// The leader releases the Lease as it closes, so a follower acquires at once; the bound is
	// generous for a loaded machine (the e2e measures takeover after a SIGKILL, without release).
	eventually(t, "a new leader", 3*lease, func() bool { return leader() != "" })
	took := time.Since(start)
	second := leader()
	// Several controller periods under the new leader.
	time.Sleep(10 * kubeStackConfig(ns, port, 3).Controller.SampleInterval)
	if n := creates.Load(); n != 3 {
		t.Errorf("pods created across the failover: %d, want 3 (the new leader resumes, never relaunches)", n)
	}
	if got := podNames(t, cs, ns); len(got) != 3 {
		t.Errorf("pods after the failover: %v, want 3", got)
	}
	if v, ok := stacks[second].Controller.View("m"); !ok || v.At.Before(start) {
		t.Errorf("the new leader %s's controller has not stepped since the failover (view at %v)", second, v.At)
	}
	t.Logf("failover %s → %s in %v; %d pods created in all", first, second, took.Round(time.Millisecond), creates.Load())
}
