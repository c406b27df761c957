package kubernetes_test

import (
	"context"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller/facts"
	"github.com/sloserve/sloserve/internal/controller/leader"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
	"github.com/sloserve/sloserve/internal/provider/kubernetes/discovery"
)

const rbacPath = "../../../deploy/kustomize/rbac.yaml"

// grant is one (scope, group, resource, verb) right; scope is "namespace" or "cluster".
type grant struct{ scope, group, resource, verb string }

func (g grant) String() string {
	return g.scope + " " + g.group + "/" + g.resource + " " + g.verb
}

// recorder records every API call a fake clientset sees.
type recorder struct {
	mu    sync.Mutex
	calls map[grant]bool
}

func (r *recorder) record(a k8stesting.Action) {
	res := a.GetResource()
	name := res.Resource
	if sub := a.GetSubresource(); sub != "" {
		name += "/" + sub
	}
	scope := "namespace"
	if a.GetNamespace() == "" {
		scope = "cluster"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[grant{scope, res.Group, name, a.GetVerb()}] = true
}

// readRBAC returns the rights the Role and ClusterRole in rbac.yaml grant.
func readRBAC(t *testing.T) map[grant]bool {
	t.Helper()
	f, err := os.Open(rbacPath)
	if err != nil {
		t.Fatalf("open %s: %v", rbacPath, err)
	}
	defer f.Close()
	type rule struct {
		APIGroups []string `yaml:"apiGroups"`
		Resources []string `yaml:"resources"`
		Verbs     []string `yaml:"verbs"`
	}
	type doc struct {
		Kind  string `yaml:"kind"`
		Rules []rule `yaml:"rules"`
	}
	out := map[grant]bool{}
	dec := yaml.NewDecoder(f)
	for {
		var d doc
		if err := dec.Decode(&d); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("decode %s: %v", rbacPath, err)
		}
		scope := map[string]string{"Role": "namespace", "ClusterRole": "cluster"}[d.Kind]
		if scope == "" {
			continue
		}
		for _, r := range d.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						if g == "*" || res == "*" || v == "*" {
							t.Errorf("%s: wildcard in %s rule %+v: rights must be listed", rbacPath, d.Kind, r)
						}
						out[grant{scope, g, res, v}] = true
					}
				}
			}
		}
	}
	return out
}

// TestRBACIsMinimal drives every path of the provider and the discovery watcher against a fake
// clientset — start, launch, readiness, terminate, interruption notice with replacement and the
// removal of the interrupted pod, endpoint events — and of the replicas (a leader-election term
// on the Lease, the peers from EndpointSlices), records the calls, and checks them against
// deploy/kustomize/rbac.yaml both ways: every call is granted, every grant is called.
func TestRBACIsMinimal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := fake.NewClientset(
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
		)
		rec := &recorder{calls: map[grant]bool{}}
		cs.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			rec.record(a)
			return false, nil, nil
		})
		cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
			rec.record(a)
			return false, nil, nil
		})
		// The test itself plays kubelet and node agent through a second, unrecorded view.
		admin := cs.Tracker()

		cfg := kubernetes.DefaultConfig()
		cfg.Resync = time.Hour
		p, err := kubernetes.New(cs, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		w := discovery.NewPodWatcher(cs, cfg.Namespace, nil)
		go func() { _ = w.Run(ctx, func(discovery.Event) {}) }()
		time.Sleep(time.Second)
		synctest.Wait()

		in, err := p.Launch(ctx, provider.Spec{Model: "mlp256", Type: "c5.large/spot"})
		if err != nil {
			t.Fatal(err)
		}
		other, err := p.Launch(ctx, provider.Spec{Model: "mlp256", Type: "c5.large"})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{in.ID, other.ID} {
			setReady(t, admin, cfg.Namespace, id, "n1")
		}
		synctest.Wait()
		if _, err := p.Instances(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.Terminate(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		// Spot notice on n1: annotate + replace, then the replacement is ready and the
		// interrupted pod goes.
		obj, _ := admin.Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
		n1 := obj.(*corev1.Node).DeepCopy()
		n1.Spec.Taints = []corev1.Taint{{Key: kubernetes.DefaultInterruptionTaint, Effect: corev1.TaintEffectNoSchedule}}
		if err := admin.Update(corev1.SchemeGroupVersion.WithResource("nodes"), n1, ""); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		now := time.Now()
		if err := p.Step(ctx, now); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		obj, _ = admin.Get(corev1.SchemeGroupVersion.WithResource("pods"), cfg.Namespace, in.ID)
		repl := obj.(*corev1.Pod).Annotations[kubernetes.AnnotationReplacement]
		if repl == "" {
			t.Fatal("no replacement launched")
		}
		setReady(t, admin, cfg.Namespace, repl, "n2")
		synctest.Wait()
		if err := p.Step(ctx, now); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if _, err := admin.Get(corev1.SchemeGroupVersion.WithResource("pods"), cfg.Namespace, in.ID); err == nil {
			t.Error("interrupted pod not deleted after its replacement became ready")
		}

		// Several gateway replicas: a term of leader election (acquire: get, create; renew: get,
		// update; release: update) and the peers from the gateway Service's EndpointSlices.
		e, err := leader.New(leader.Config{Client: cs, Namespace: cfg.Namespace, Name: config.DefaultLeaseName, Identity: "gw-0",
			LeaseDuration: config.DefaultLeaseDuration, RenewDeadline: config.DefaultRenewDeadline, RetryPeriod: config.DefaultRetryPeriod})
		if err != nil {
			t.Fatal(err)
		}
		lctx, lcancel := context.WithCancel(ctx)
		led := make(chan struct{})
		go func() {
			defer close(led)
			_ = e.Run(lctx, func(c context.Context) { <-c.Done() })
		}()
		time.Sleep(3 * config.DefaultRetryPeriod)
		synctest.Wait()
		if !e.IsLeader() {
			t.Error("the only replica does not lead")
		}
		lcancel()
		<-led
		if _, err := (facts.EndpointSlices{Client: cs, Namespace: cfg.Namespace, Service: "sloserve", Port: "http"}).URLs(ctx); err != nil {
			t.Fatal(err)
		}

		allowed := readRBAC(t)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var missing, unused []string
		for c := range rec.calls {
			if !allowed[c] {
				missing = append(missing, c.String())
			}
		}
		for g := range allowed {
			if !rec.calls[g] {
				unused = append(unused, g.String())
			}
		}
		sort.Strings(missing)
		sort.Strings(unused)
		if len(missing) > 0 {
			t.Errorf("calls not granted by %s: %s", rbacPath, strings.Join(missing, "; "))
		}
		if len(unused) > 0 {
			t.Errorf("grants in %s never used (not least privilege): %s", rbacPath, strings.Join(unused, "; "))
		}
		var calls []string
		for c := range rec.calls {
			calls = append(calls, c.String())
		}
		slices.Sort(calls)
		t.Logf("calls: %s", strings.Join(calls, "; "))
	})
}

// setReady plays the kubelet without going through the recorded client.
func setReady(t *testing.T, tr k8stesting.ObjectTracker, ns, name, node string) {
	t.Helper()
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	obj, err := tr.Get(gvr, ns, name)
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	pod.Spec.NodeName = node
	pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, "10.2.0.9"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := tr.Update(gvr, pod, ns); err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
}
