//go:build e2e

package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
	"github.com/sloserve/sloserve/internal/provider/kubernetes/discovery"
)

const rbacPath = "../../../deploy/kustomize/rbac.yaml"

// Bounds of the waits: KWOK makes pods Running within seconds; these only stop a broken run.
const (
	readyWithin = 90 * time.Second
	poll        = 200 * time.Millisecond
)

// timeline records discovery events with their arrival time.
type timeline struct {
	mu     sync.Mutex
	events []stamped
}

type stamped struct {
	at time.Time
	discovery.Event
}

func (tl *timeline) emit(ev discovery.Event) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.events = append(tl.events, stamped{time.Now(), ev})
}

func (tl *timeline) snapshot() []stamped {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.events)
}

// kinds returns the event kinds seen for id, in order.
func (tl *timeline) kinds(id string) []discovery.Kind {
	var out []discovery.Kind
	for _, e := range tl.snapshot() {
		if e.Instance.ID == id {
			out = append(out, e.Kind)
		}
	}
	return out
}

func adminConfig(t *testing.T) *rest.Config {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		t.Skip("KUBECONFIG not set: start the control plane with scripts/k8s-controlplane.sh start (or run make e2e-k8s)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", path, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	return cfg
}

// setupNamespace creates a fresh namespace with the RBAC objects of deploy/kustomize/rbac.yaml
// moved into it, and returns a client that acts as its ServiceAccount — so the provider runs
// with exactly the rights the manifests grant.
func setupNamespace(t *testing.T, ctx context.Context, admin clientset.Interface, base *rest.Config) (string, clientset.Interface) {
	t.Helper()
	ns, scfg := setupNamespaceConfig(t, ctx, admin, base)
	cs, err := clientset.NewForConfig(scfg)
	if err != nil {
		t.Fatal(err)
	}
	return ns, cs
}

// setupNamespaceConfig is setupNamespace returning the ServiceAccount's client configuration
// (for processes the test starts: a kubeconfig with its token).
func setupNamespaceConfig(t *testing.T, ctx context.Context, admin clientset.Interface, base *rest.Config) (string, *rest.Config) {
	t.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	ns := "sloserve-e2e-" + hex.EncodeToString(b[:])
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	raw, err := os.ReadFile(rbacPath)
	if err != nil {
		t.Fatalf("read %s: %v", rbacPath, err)
	}
	var sa string
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode %s: %v", rbacPath, err)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			o.Namespace, sa = ns, o.Name
			_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			o.Namespace = ns
			_, err = admin.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			o.Namespace = ns
			for i := range o.Subjects {
				o.Subjects[i].Namespace = ns
			}
			_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			o.Name += "-" + ns
			_, err = admin.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
			name := o.Name
			t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		case *rbacv1.ClusterRoleBinding:
			o.Name += "-" + ns
			o.RoleRef.Name += "-" + ns
			for i := range o.Subjects {
				o.Subjects[i].Namespace = ns
			}
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
			name := o.Name
			t.Cleanup(func() {
				_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
			})
		default:
			t.Fatalf("%s: unexpected %T", rbacPath, obj)
		}
		if err != nil {
			t.Fatalf("create %T: %v", obj, err)
		}
	}
	if sa == "" {
		t.Fatalf("%s has no ServiceAccount", rbacPath)
	}
	// Pods need the namespace's default ServiceAccount (made by kube-controller-manager).
	waitFor(t, "default ServiceAccount", 30*time.Second, func() (bool, error) {
		_, err := admin.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	exp := int64(3600)
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", sa, err)
	}
	scfg := rest.AnonymousClientConfig(base)
	scfg.BearerToken = tok.Status.Token
	scfg.QPS, scfg.Burst = 50, 100
	return ns, scfg
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	for time.Since(start) < within {
		ok, err := cond()
		if ok {
			return time.Since(start)
		}
		last = err
		time.Sleep(poll)
	}
	t.Fatalf("timed out after %v waiting for %s (last error: %v)", within, what, last)
	return 0
}

// byState returns the provider's instances grouped by state.
func byState(ctx context.Context, p *kubernetes.Provider) (map[provider.State][]provider.Instance, error) {
	ins, err := p.Instances(ctx)
	if err != nil {
		return nil, err
	}
	out := map[provider.State][]provider.Instance{}
	for _, in := range ins {
		out[in.State] = append(out[in.State], in)
	}
	return out, nil
}

func TestProviderOnControlPlane(t *testing.T) {
	base := adminConfig(t)
	admin, err := clientset.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelCapacity})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	var spotNodes []string
	for _, n := range nodes.Items {
		if n.Labels[kubernetes.LabelCapacity] == kubernetes.CapacitySpot {
			spotNodes = append(spotNodes, n.Name)
		}
	}
	if len(spotNodes) < 2 || len(nodes.Items)-len(spotNodes) < 1 {
		t.Fatalf("need ≥ 2 spot and ≥ 1 on-demand fake nodes, have %d nodes (%v spot)", len(nodes.Items), spotNodes)
	}
	ns, sacs := setupNamespace(t, ctx, admin, base)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	cfg := kubernetes.DefaultConfig()
	cfg.Namespace = ns
	cfg.Resync = 500 * time.Millisecond
	cfg.InterruptionGrace = 2 * time.Minute
	cfg.StopTimeout = time.Second // KWOK deletes a pod once its grace period is over
	p, err := kubernetes.New(sacs, cfg, log.With("component", "provider"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatalf("Start as the ServiceAccount: %v", err)
	}
	defer p.Close()

	var tl timeline
	w := discovery.NewPodWatcher(sacs, ns, log.With("component", "discovery"))
	wctx, wcancel := context.WithCancel(ctx)
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(wctx, tl.emit) }()
	defer func() { wcancel(); <-wdone }()

	// 1. Scale up: N instances, each with its own batching config, on both markets.
	const nOnDemand, nSpot = 4, 4
	var specs []provider.Spec
	for i := range nOnDemand + nSpot {
		s := provider.Spec{Model: "mlp256", Type: "c5.large", Tier: provider.TierVM, MaxBatch: 4 << (i % 3), MaxWait: time.Duration(5*(i%4+1)) * time.Millisecond}
		if i >= nOnDemand {
			s.Type = "c5.large/spot"
		}
		specs = append(specs, s)
	}
	start := time.Now()
	launched := map[string]provider.Spec{}
	for _, s := range specs {
		in, err := p.Launch(ctx, s)
		if err != nil {
			t.Fatalf("Launch(%+v): %v", s, err)
		}
		launched[in.ID] = s
	}
	up := waitFor(t, fmt.Sprintf("%d instances ready", len(specs)), readyWithin, func() (bool, error) {
		st, err := byState(ctx, p)
		return err == nil && len(st[provider.StateReady]) == len(specs), err
	})
	t.Logf("scale-up: %d instances ready in %v", len(specs), up.Round(time.Millisecond))

	// Ready in the API server itself (admin view), on the right pools, with the spec preserved.
	pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.Selector()})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		in := kubernetes.InstanceFromPod(&pod, false)
		if in.State != provider.StateReady {
			t.Errorf("API server: pod %s state %s (phase %s), want ready", pod.Name, in.State, pod.Status.Phase)
		}
		if want := launched[pod.Name]; in.Spec != want {
			t.Errorf("pod %s spec %+v, want %+v", pod.Name, in.Spec, want)
		}
		n, err := admin.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("node of %s: %v", pod.Name, err)
		}
		if got, want := n.Labels[kubernetes.LabelCapacity], pod.Labels[kubernetes.LabelCapacity]; got != want {
			t.Errorf("pod %s (%s) scheduled on %s node %s", pod.Name, want, got, n.Name)
		}
	}
	// The endpoint set follows: one Add per instance with its pod address.
	waitFor(t, "discovery adds", 10*time.Second, func() (bool, error) { return len(w.Ready()) == len(specs), nil })
	ins, _ := p.Instances(ctx)
	if got, want := addrs(w.Ready()), addrs(ins); !slices.Equal(got, want) {
		t.Errorf("discovery endpoints %v, provider instances %v", got, want)
	}
	t.Logf("endpoints after scale-up: %v", addrs(w.Ready()))

	// 2. Scale down: terminate two on-demand instances; each is drained, then removed.
	var down []string
	for _, in := range ins {
		if launched[in.ID].Type == "c5.large" && len(down) < 2 {
			down = append(down, in.ID)
		}
	}
	start = time.Now()
	for _, id := range down {
		if err := p.Terminate(ctx, id); err != nil {
			t.Fatalf("Terminate(%s): %v", id, err)
		}
	}
	gone := waitFor(t, "terminated instances gone", readyWithin, func() (bool, error) {
		ins, err := p.Instances(ctx)
		if err != nil {
			return false, err
		}
		for _, in := range ins {
			if slices.Contains(down, in.ID) {
				return false, nil
			}
		}
		return true, nil
	})
	waitFor(t, "discovery removes", 10*time.Second, func() (bool, error) {
		for _, id := range down {
			if k := tl.kinds(id); len(k) == 0 || k[len(k)-1] != discovery.Remove {
				return false, nil
			}
		}
		return true, nil
	})
	for _, id := range down {
		if got, want := tl.kinds(id), []discovery.Kind{discovery.Add, discovery.Drain, discovery.Remove}; !slices.Equal(got, want) {
			t.Errorf("events of terminated %s = %v, want %v", id, got, want)
		}
	}
	t.Logf("scale-down: 2 instances gone in %v", gone.Round(time.Millisecond))

	// 3. Interruption: mark a spot node for termination with the taint a node termination
	// handler would set. Its instances get the notice, replacements start on the other spot
	// node, and the interrupted pods go only once their replacements are ready.
	ins, _ = p.Instances(ctx)
	count := map[string][]string{}
	for _, pod := range mustPods(t, ctx, admin, ns).Items {
		if pod.Labels[kubernetes.LabelCapacity] == kubernetes.CapacitySpot {
			count[pod.Spec.NodeName] = append(count[pod.Spec.NodeName], pod.Name)
		}
	}
	victim := ""
	for _, n := range spotNodes {
		if len(count[n]) > len(count[victim]) {
			victim = n
		}
	}
	moved := count[victim]
	slices.Sort(moved)
	t.Logf("interrupting spot node %s with instances %v", victim, moved)
	start = time.Now()
	patch := fmt.Sprintf(`{"spec":{"taints":[{"key":%q,"value":"true","effect":"NoSchedule"},{"key":"sloserve.io/spot","value":"true","effect":"NoSchedule"}]}}`, kubernetes.DefaultInterruptionTaint)
	if _, err := admin.CoreV1().Nodes().Patch(ctx, victim, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("taint %s: %v", victim, err)
	}
	defer func() {
		restore := `{"spec":{"taints":[{"key":"sloserve.io/spot","value":"true","effect":"NoSchedule"}]}}`
		_, _ = admin.CoreV1().Nodes().Patch(context.Background(), victim, types.MergePatchType, []byte(restore), metav1.PatchOptions{})
	}()
	// The notice: every instance on the node is annotated interrupted (or already gone, when
	// its replacement was quicker than this poll).
	noticed := waitFor(t, "interruption notice", 30*time.Second, func() (bool, error) {
		marked := map[string]bool{}
		for _, pod := range mustPods(t, ctx, admin, ns).Items {
			marked[pod.Name] = pod.Annotations[kubernetes.AnnotationInterrupted] != ""
		}
		for _, id := range moved {
			if m, ok := marked[id]; ok && !m {
				return false, nil
			}
		}
		return true, nil
	})
	moveDone := waitFor(t, "interrupted instances replaced", readyWithin, func() (bool, error) {
		pods := mustPods(t, ctx, admin, ns)
		ready := 0
		for _, pod := range pods.Items {
			if slices.Contains(moved, pod.Name) {
				return false, nil
			}
			if kubernetes.InstanceFromPod(&pod, false).State == provider.StateReady {
				ready++
			}
		}
		return ready == len(specs)-len(down), nil
	})
	t.Logf("interruption: notice seen in %v, %d instances moved in %v", noticed.Round(time.Millisecond), len(moved), (noticed + moveDone).Round(time.Millisecond))
	for _, pod := range mustPods(t, ctx, admin, ns).Items {
		if pod.Spec.NodeName == victim {
			t.Errorf("pod %s still on interrupted node %s", pod.Name, victim)
		}
		if r := pod.Annotations[kubernetes.AnnotationReplaces]; r != "" && !slices.Contains(moved, r) {
			t.Errorf("pod %s replaces %s, which was not on %s", pod.Name, r, victim)
		}
	}
	waitFor(t, "discovery removes of interrupted", 10*time.Second, func() (bool, error) {
		for _, id := range moved {
			if k := tl.kinds(id); len(k) == 0 || k[len(k)-1] != discovery.Remove {
				return false, nil
			}
		}
		return true, nil
	})
	for _, id := range moved {
		if got, want := tl.kinds(id), []discovery.Kind{discovery.Add, discovery.Drain, discovery.Remove}; !slices.Equal(got, want) {
			t.Errorf("events of interrupted %s = %v, want %v", id, got, want)
		}
	}

	// No request lost, at the level of endpoints: every Remove follows a Drain of the same
	// instance; an interrupted instance is removed only after its replacement was added; the
	// model's endpoint set is never empty once the first instance was added.
	evs := tl.snapshot()
	added := map[string]time.Time{}
	drained := map[string]bool{}
	live := map[string]bool{}
	for i, e := range evs {
		id := e.Instance.ID
		switch e.Kind {
		case discovery.Add:
			added[id], live[id], drained[id] = e.at, true, false
		case discovery.Drain:
			drained[id], live[id] = true, false
		case discovery.Remove:
			if !drained[id] {
				t.Errorf("event %d: remove %s without a drain", i, id)
			}
		}
		if i > 0 && countTrue(live) == 0 {
			t.Errorf("event %d (%s %s): endpoint set empty", i, e.Kind, id)
		}
	}
	for _, pod := range mustPods(t, ctx, admin, ns).Items {
		old := pod.Annotations[kubernetes.AnnotationReplaces]
		if old == "" {
			continue
		}
		var removedAt time.Time
		for _, e := range evs {
			if e.Instance.ID == old && e.Kind == discovery.Remove {
				removedAt = e.at
			}
		}
		if a, ok := added[pod.Name]; !ok || removedAt.Before(a) {
			t.Errorf("interrupted %s removed at %v before its replacement %s was added (%v)", old, removedAt, pod.Name, a)
		}
	}
	t.Logf("%d endpoint events; final endpoints %v", len(evs), addrs(w.Ready()))

	// 4. Scale to zero.
	ins, _ = p.Instances(ctx)
	for _, in := range ins {
		if err := p.Terminate(ctx, in.ID); err != nil {
			t.Errorf("Terminate(%s): %v", in.ID, err)
		}
	}
	zero := waitFor(t, "scale to zero", readyWithin, func() (bool, error) {
		ins, err := p.Instances(ctx)
		return err == nil && len(ins) == 0, err
	})
	t.Logf("scale to zero: %v; total %v", zero.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if _, err := sacs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("ServiceAccount listing pods in another namespace: err = %v, want Forbidden", err)
	}
}

func mustPods(t *testing.T, ctx context.Context, cs clientset.Interface, ns string) *corev1.PodList {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.Selector()})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	return pods
}

func addrs(ins []provider.Instance) []string {
	var out []string
	for _, in := range ins {
		if in.State == provider.StateReady {
			out = append(out, in.ID+"="+in.Addr)
		}
	}
	slices.Sort(out)
	return out
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
