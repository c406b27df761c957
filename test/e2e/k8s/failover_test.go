//go:build e2e

package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sloserve/sloserve/internal/controller/facts"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
)

// The failover run: three gateway replicas (real `sloserve serve` processes) with leader
// election on the control plane, three mlp256 pods whose workers are real `sloserve worker`
// processes on the pods' loopback IPs, open-loop load through the three gateways, and a SIGKILL
// of the leader a third of the way in.
const (
	foReplicas   = 3
	foPods       = 3
	foRate       = 30.0 // requests/s over all replicas
	foDuration   = 30 * time.Second
	foKillAt     = 10 * time.Second // the leader
	foKillFollow = 22 * time.Second // then a follower: the new leader serves alone
	foLease      = 4 * time.Second
	foRenew      = 3 * time.Second
	foRetry      = 500 * time.Millisecond
	foSLO        = time.Second
	foTarget     = 0.95
	foSample     = 500 * time.Millisecond
	foLeaseName  = "sloserve-controller"
	foModel      = "mlp256"
	foReqTimeout = 10 * time.Second
	// Every request sleeps foRowTime on its worker (--min-row-time, via the provider's
	// kubernetes.args in the pod spec), so that requests are in flight on the leader when it is
	// killed; each worker runs foSlots batches at once (--max-in-flight from the model's slots):
	// 3 workers × 2 slots / 40 ms = 150 rows/s of capacity for 30 req/s.
	foRowTime = 40 * time.Millisecond
	foSlots   = 2
	// foAPIAllowance is the API latency the failover bound allows beyond the lease duration: the
	// new leader's read and write of the Lease and this test's polling of it.
	foAPIAllowance = 100 * time.Millisecond
)

// sloserveBin returns $SLOSERVE_BIN, else builds cmd/sloserve into a temporary directory.
func sloserveBin(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("SLOSERVE_BIN"); b != "" {
		return b
	}
	bin := filepath.Join(t.TempDir(), "sloserve")
	cmd := exec.Command("go", "build", "-o", bin, "../../../cmd/sloserve")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/sloserve: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a TCP port free on every loopback address at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeKubeconfig writes a kubeconfig acting as cfg's bearer token.
func writeKubeconfig(t *testing.T, cfg *rest.Config, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: sa
  user: {token: %q}
contexts:
- name: e2e
  context: {cluster: e2e, user: sa}
current-context: e2e
`, cfg.Host, cfg.BearerToken)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// replicaConfig is the serve config of replica i: provider kubernetes in ns as the
// ServiceAccount, the static controller keeping foPods pods, leader election, static peers.
func replicaConfig(ns, kubeconfig, addr string, i, workerPort int, peers []string) string {
	return fmt.Sprintf(`gateway:
  addr: %s
  sync_interval: 100ms
provider:
  kind: kubernetes
  kubernetes:
    namespace: %s
    kubeconfig: %s
    worker_port: %d
    args: ["--min-row-time", "%s"]
    start_timeout: 90s
    stop_timeout: 1s
    watch_nodes: false
models:
  - name: %s
    slo: {threshold: %s, target: %v}
    slots: %d
    instances: %d
    instance_type: {name: c5.large, price_per_hour: 0.085, launch_delay: 5s}
controller:
  policy: none
  sample_interval: %s
  unit: 1s
  leader_election:
    enabled: true
    lease_name: %s
    identity: gw-%d
    lease_duration: %s
    renew_deadline: %s
    retry_period: %s
  peers:
    static: [%s]
`, addr, ns, kubeconfig, workerPort, foRowTime, foModel, foSLO, foTarget, foSlots, foPods, foSample, foLeaseName, i, foLease, foRenew, foRetry, strings.Join(peers, ", "))
}

// proc is a process the test started, with its output in a file.
type proc struct {
	cmd *exec.Cmd
	out string
}

func start(t *testing.T, dir, name, bin string, args ...string) *proc {
	t.Helper()
	out := filepath.Join(dir, name+".log")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	f.Close()
	p := &proc{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// tail returns the last lines of the process's output.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// workers starts a real `sloserve worker` on each pod's loopback IP as soon as the pod has one,
// with the arguments the provider wrote in the pod spec (the address replaced by the pod's IP),
// and records every pod it ever saw (to count creations).
type workers struct {
	mu      sync.Mutex
	started map[string]string    // pod -> addr
	created map[string]time.Time // pod -> creation time
	args    map[string][]string  // pod -> the worker container's args
}

func (w *workers) run(ctx context.Context, t *testing.T, admin clientset.Interface, ns, bin, dir string, port int) {
	for ctx.Err() == nil {
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.Selector()})
		if err == nil {
			for _, pod := range pods.Items {
				w.mu.Lock()
				if _, ok := w.created[pod.Name]; !ok {
					w.created[pod.Name] = pod.CreationTimestamp.Time
				}
				_, up := w.started[pod.Name]
				w.mu.Unlock()
				ip := pod.Status.PodIP
				if up || ip == "" {
					continue
				}
				if !net.ParseIP(ip).IsLoopback() {
					t.Errorf("pod %s has IP %s: the control plane must give pods loopback IPs (scripts/k8s-controlplane.sh)", pod.Name, ip)
					continue
				}
				addr := net.JoinHostPort(ip, strconv.Itoa(port))
				args := slices.Clone(pod.Spec.Containers[0].Args) // the last --addr wins
				start(t, dir, "worker-"+pod.Name, bin, append(append([]string{"worker"}, args...), "--addr", addr, "--log-level", "warn")...)
				w.mu.Lock()
				w.started[pod.Name] = addr
				w.args[pod.Name] = args
				w.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *workers) snapshot() (map[string]string, map[string]time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return cloneMap(w.started), cloneMap(w.created)
}

func (w *workers) argsSnapshot() map[string][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return cloneMap(w.args)
}

func cloneMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// outcome is one request's fate.
type outcome struct {
	replica      int
	sent, done   time.Time
	code         int
	err          error
	withinSLO    bool
	answeredByGW bool
}

func httpOK(url string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func getFacts(url string) (facts.Report, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return facts.Fetch(ctx, http.DefaultClient, url, "")
}

// inferBody is one mlp256 request: a 784-pixel image of zeros.
func inferBody() []byte {
	b, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{
		"name": "input", "datatype": "FP32", "shape": []int{1, 784}, "data": make([]float32, 784)}}})
	return b
}

// TestFailoverOnControlPlane: three `sloserve serve` replicas with leader election serve
// open-loop load through real workers behind KWOK pods; the leader is SIGKILLed mid-run, and
// later a follower. A new
// leader takes over within the lease duration (plus 100 ms of API latency), no pod is
// launched twice, every request is answered (completed + failed + rejected = requests), the
// failures are only requests in flight on the killed replica, SLO attainment is back at target
// after the failover, and the leader's facts count the whole fleet's arrivals before and after.
func TestFailoverOnControlPlane(t *testing.T) {
	base := adminConfig(t)
	admin, err := clientset.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	bin := sloserveBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns, sacfg := setupNamespaceConfig(t, ctx, admin, base)
	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, sacfg, dir)
	workerPort := freePort(t)

	// Real workers on the pods' loopback IPs.
	w := &workers{started: map[string]string{}, created: map[string]time.Time{}, args: map[string][]string{}}
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() { defer close(wdone); w.run(wctx, t, admin, ns, bin, dir, workerPort) }()
	defer func() { wcancel(); <-wdone }()

	// Three replicas.
	var urls []string
	for range foReplicas {
		urls = append(urls, "http://127.0.0.1:"+strconv.Itoa(freePort(t)))
	}
	var gws []*proc
	for i := range foReplicas {
		cfgPath := filepath.Join(dir, fmt.Sprintf("gw-%d.yaml", i))
		if err := os.WriteFile(cfgPath, []byte(replicaConfig(ns, kubeconfig, strings.TrimPrefix(urls[i], "http://"), i, workerPort, urls)), 0o644); err != nil {
			t.Fatal(err)
		}
		gws = append(gws, start(t, dir, fmt.Sprintf("gw-%d", i), bin, "serve", "--config", cfgPath, "--log-level", "info"))
	}
	upStart := time.Now()
	fail := func(format string, a ...any) {
		t.Helper()
		for i, g := range gws {
			t.Logf("gw-%d output:\n%s", i, g.tail())
		}
		t.Fatalf(format, a...)
	}
	holder := func() string {
		l, err := admin.CoordinationV1().Leases(ns).Get(ctx, foLeaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	deadline := time.Now().Add(readyWithin + 30*time.Second)
	for {
		started, _ := w.snapshot()
		ready := 0
		for _, a := range started {
			if httpOK("http://" + a + "/v2/health/ready") {
				ready++
			}
		}
		gwReady := 0
		for _, u := range urls {
			if httpOK(u + "/v2/health/ready") {
				gwReady++
			}
		}
		if ready == foPods && gwReady == foReplicas && holder() != "" {
			break
		}
		if time.Now().After(deadline) {
			fail("fleet not up after %v: %d/%d workers ready, %d/%d replicas ready, lease holder %q", readyWithin, ready, foPods, gwReady, foReplicas, holder())
		}
		time.Sleep(200 * time.Millisecond)
	}
	first := holder()
	leaderIdx, _ := strconv.Atoi(strings.TrimPrefix(first, "gw-"))
	t.Logf("fleet up in %v: %d replicas ready, leader %s, %d real workers on pod IPs", time.Since(upStart).Round(time.Millisecond), foReplicas, first, foPods)

	// Open-loop load through the live replicas; the leader dies at foKillAt.
	body := inferBody()
	client := &http.Client{Timeout: foReqTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var mu sync.Mutex
	var outs []*outcome
	var wg sync.WaitGroup
	alive := slices.Repeat([]bool{true}, foReplicas)
	var killAt, followerKillAt time.Time
	var inflightAtKill, inflightAtFollowerKill int
	followerIdx := -1
	var lastRenew time.Time // the dead leader's last renewal of the Lease
	rate := foRate
	interval := time.Duration(float64(time.Second) / rate)
	loadStart := time.Now()
	var samples []factsAt // the leader's fleet arrivals over time (both leaders)
	sampleFleet := func(idx int) {
		rep, err := getFacts(urls[idx])
		if err != nil || !rep.Leader {
			return
		}
		mu.Lock()
		samples = append(samples, factsAt{rep.Identity, time.Now(), rep.Fleet[foModel].Arrivals, len(outs)})
		mu.Unlock()
	}
	newLeader := make(chan time.Time, 1)
	inflightOn := func(idx int) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, o := range outs {
			if o.replica == idx && o.done.IsZero() {
				n++
			}
		}
		return n
	}
	next := 0
	for i := 0; ; i++ {
		at := loadStart.Add(time.Duration(i) * interval)
		if at.Sub(loadStart) >= foDuration {
			break
		}
		time.Sleep(time.Until(at))
		// Kill the leader with requests in flight on it: at the first tick from foKillAt that
		// has some (within 3 s).
		if killAt.IsZero() && at.Sub(loadStart) >= foKillAt && (inflightOn(leaderIdx) > 0 || at.Sub(loadStart) >= foKillAt+3*time.Second) {
			mu.Lock()
			alive[leaderIdx] = false // stop sending to it first
			for _, o := range outs {
				if o.replica == leaderIdx && o.done.IsZero() {
					inflightAtKill++
				}
			}
			mu.Unlock()
			killAt = time.Now()
			if err := gws[leaderIdx].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL the leader: %v", err)
			}
			if l, err := admin.CoordinationV1().Leases(ns).Get(ctx, foLeaseName, metav1.GetOptions{}); err == nil && l.Spec.RenewTime != nil {
				lastRenew = l.Spec.RenewTime.Time
			}
			go func() {
				for time.Since(killAt) < 5*foLease {
					if h := holder(); h != "" && h != first {
						newLeader <- time.Now()
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				close(newLeader)
			}()
		}
		if followerKillAt.IsZero() && at.Sub(loadStart) >= foKillFollow {
			h := holder()
			for j := range foReplicas {
				if alive[j] && "gw-"+strconv.Itoa(j) != h {
					followerIdx = j
				}
			}
			if followerIdx < 0 {
				t.Fatalf("no follower left to kill (holder %q)", h)
			}
			mu.Lock()
			alive[followerIdx] = false
			for _, o := range outs {
				if o.replica == followerIdx && o.done.IsZero() {
					inflightAtFollowerKill++
				}
			}
			mu.Unlock()
			followerKillAt = time.Now()
			if err := gws[followerIdx].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("SIGKILL the follower: %v", err)
			}
		}
		if i%int(foRate) == 0 { // once a second: the leader's view of the fleet
			idx := leaderIdx
			if !killAt.IsZero() {
				idx, _ = strconv.Atoi(strings.TrimPrefix(holder(), "gw-"))
			}
			go sampleFleet(idx)
		}
		for !alive[next%foReplicas] {
			next++
		}
		r := next % foReplicas
		next++
		o := &outcome{replica: r, sent: time.Now()}
		mu.Lock()
		outs = append(outs, o)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post(urls[r]+"/v2/models/"+foModel+"/infer", "application/json", bytes.NewReader(body))
			var code int
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				code = resp.StatusCode
			}
			mu.Lock()
			defer mu.Unlock()
			o.done, o.code, o.err = time.Now(), code, err
			o.answeredByGW = err == nil
			o.withinSLO = err == nil && code == http.StatusOK && o.done.Sub(o.sent) <= foSLO
		}()
	}
	wg.Wait()
	nl, ok := <-newLeader
	if !ok {
		fail("no new leader within %v of the SIGKILL", 5*foLease)
	}
	failover := nl.Sub(killAt)
	second := holder()

	// Count.
	var completed, failed, rejected, other int
	var failedElsewhere, rejectedAt []string
	var preN, preOK, postN, postOK int
	postFrom := nl.Add(2 * time.Second) // a sample period and a sync after the new leader
	for _, o := range outs {
		switch {
		case o.err == nil && o.code == http.StatusOK:
			completed++
		case o.err == nil && (o.code == http.StatusTooManyRequests || o.code == http.StatusServiceUnavailable):
			rejected++
			rejectedAt = append(rejectedAt, fmt.Sprintf("gw-%d@%v:%d", o.replica, o.sent.Sub(loadStart).Round(100*time.Millisecond), o.code))
		case o.err != nil || o.code != 0:
			failed++
			inFlightOnKilled := (o.replica == leaderIdx && o.sent.Before(killAt)) || (o.replica == followerIdx && o.sent.Before(followerKillAt))
			if !inFlightOnKilled {
				failedElsewhere = append(failedElsewhere, fmt.Sprintf("gw-%d sent %v after start: code %d err %v",
					o.replica, o.sent.Sub(loadStart).Round(time.Millisecond), o.code, o.err))
			}
		default:
			other++
		}
		switch {
		case o.sent.Before(killAt):
			preN++
			if o.withinSLO {
				preOK++
			}
		case !o.sent.Before(postFrom):
			postN++
			if o.withinSLO {
				postOK++
			}
		}
	}
	pre, post := float64(preOK)/float64(max(preN, 1)), float64(postOK)/float64(max(postN, 1))
	_, created := w.snapshot()
	var late []string
	for pod, at := range created {
		if at.After(killAt.Add(-time.Second)) { // creation timestamps have 1 s resolution
			late = append(late, pod)
		}
	}
	t.Logf("load: %d requests at %.0f/s over %v through %d replicas; leader %s SIGKILLed at %v (%d of its requests in flight)",
		len(outs), foRate, foDuration, foReplicas, first, killAt.Sub(loadStart).Round(time.Millisecond), inflightAtKill)
	t.Logf("failover: new leader %s %v after the SIGKILL, %v after the dead leader's last renewal (lease_duration %v, retry_period %v)",
		second, failover.Round(time.Millisecond), nl.Sub(lastRenew).Round(time.Millisecond), foLease, foRetry)
	t.Logf("follower gw-%d SIGKILLed at %v (%d of its requests in flight); the leader %s served alone from then on (holder now %q)",
		followerIdx, followerKillAt.Sub(loadStart).Round(time.Millisecond), inflightAtFollowerKill, second, holder())
	t.Logf("requests %d = completed %d + failed %d + rejected %d (unanswered %d); failed elsewhere %d",
		len(outs), completed, failed, rejected, other, len(failedElsewhere))
	if len(rejectedAt) > 0 {
		t.Logf("rejected (replica@sent:code): %v", rejectedAt[:min(20, len(rejectedAt))])
	}
	t.Logf("attainment (≤ %v): %.3f before the kill (%d requests), %.3f from 2 s after the new leader (%d requests); target %.2f",
		foSLO, pre, preN, post, postN, foTarget)
	t.Logf("pods created over the run: %d (%v)", len(created), slices.Sorted(func(yield func(string) bool) {
		for k := range created {
			if !yield(k) {
				return
			}
		}
	}))

	// Assert.
	if second == "" || second == first {
		t.Errorf("lease holder after the kill %q, want another replica than %s", second, first)
	}
	if bound := foLease + foAPIAllowance; failover > bound {
		t.Errorf("failover took %v, want ≤ lease_duration %v + %v of API latency (a follower takes over lease_duration after it observed the last renewal, which came before the kill)", failover, foLease, foAPIAllowance)
	}
	if inflightAtKill == 0 {
		t.Errorf("no request was in flight on the leader at the SIGKILL: the in-flight failure path was not exercised")
	}
	for pod, args := range w.argsSnapshot() {
		i := slices.Index(args, "--max-in-flight")
		if i < 0 || i+1 >= len(args) || args[i+1] != strconv.Itoa(foSlots) {
			t.Errorf("pod %s: worker args %q, want --max-in-flight %d (the model's slots, from the provider)", pod, args, foSlots)
		}
	}
	if other != 0 || completed+failed+rejected != len(outs) {
		t.Errorf("requests %d != completed %d + failed %d + rejected %d (%d unanswered)", len(outs), completed, failed, rejected, other)
	}
	if len(failedElsewhere) > 0 {
		t.Errorf("%d failures other than requests in flight on the killed replica: %v", len(failedElsewhere), failedElsewhere[:min(5, len(failedElsewhere))])
	}
	if h := holder(); h != second {
		t.Errorf("lease holder %q after the follower's death, want %s still", h, second)
	}
	if failed > inflightAtKill+inflightAtFollowerKill {
		t.Errorf("failed %d > %d requests in flight on the killed replicas", failed, inflightAtKill+inflightAtFollowerKill)
	}
	if len(created) != foPods || len(late) > 0 {
		t.Errorf("pods created %d (%d at or after the kill: %v), want %d, none relaunched by the new leader", len(created), len(late), late, foPods)
	}
	if pre < foTarget || post < foTarget {
		t.Errorf("attainment %.3f before / %.3f after the failover, want ≥ %.2f", pre, post, foTarget)
	}
	// The leaders' facts: over every second, fleet arrivals grew by the requests sent to every
	// replica in that second (within the sampling skew of one controller period).
	checkFleetFacts(t, samples, first, second)
}

// factsAt is a leader's fleet arrivals at a time, with the requests the test had sent by then.
type factsAt struct {
	leader   string
	at       time.Time
	arrivals int64
	sent     int
}

// checkFleetFacts compares the growth of each leader's fleet arrivals with the requests the test
// sent over the same span: the leader counts the traffic of every replica, not its own third.
func checkFleetFacts(t *testing.T, samples []factsAt, leaders ...string) {
	t.Helper()
	for _, l := range leaders {
		var s []factsAt
		for _, x := range samples {
			if x.leader == l {
				s = append(s, x)
			}
		}
		if len(s) < 2 {
			t.Errorf("leader %s: %d facts samples, want ≥ 2", l, len(s))
			continue
		}
		// Skip the first sample of a new leader: its first gather is the baseline.
		a, b := s[min(1, len(s)-2)], s[len(s)-1]
		got, sent := b.arrivals-a.arrivals, b.sent-a.sent
		ratio := float64(got) / float64(max(sent, 1))
		t.Logf("leader %s: fleet arrivals +%d over %v while the test sent %d to all replicas (ratio %.2f)", l, got, b.at.Sub(a.at).Round(time.Millisecond), sent, ratio)
		if sent < int(3*foRate) || ratio < 0.75 || ratio > 1.25 {
			t.Errorf("leader %s: fleet arrivals +%d for %d sent (ratio %.2f), want the whole fleet's (0.75–1.25) over ≥ 3 s", l, got, sent, ratio)
		}
	}
}
