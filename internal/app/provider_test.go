package app

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
)

// TestKubernetesConfigDefaults checks that the file's defaults (config.DefaultKubernetes, which
// cannot import the provider) are the provider's own (kubernetes.DefaultConfig).
func TestKubernetesConfigDefaults(t *testing.T) {
	k := config.DefaultKubernetes()
	k.Namespace = "sloserve"
	got, want := KubernetesConfig(k), kubernetes.DefaultConfig()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("KubernetesConfig(config.DefaultKubernetes()) (-want +got):\n- %+v\n+ %+v", want, got)
	}
}

func TestKubernetesConfigFields(t *testing.T) {
	k := config.DefaultKubernetes()
	k.Namespace, k.Image, k.ImagePullPolicy, k.WorkerPort = "prod", "reg/sloserve:v1", "Always", 9000
	k.Args, k.ServiceAccount, k.StopTimeout = []string{"--runtime", "native"}, "worker", 3*time.Second
	k.Types = map[string]config.KubernetesResources{"tiny": {MilliCPU: 250, MemoryMiB: 256}, "c5.large": {MilliCPU: 1500, MemoryMiB: 3000}}
	k.OnDemandNodeSelector, k.SpotNodeSelector = config.Labels{}, config.Labels{"pool": "cheap"}
	k.SpotTolerations = []config.Toleration{{Key: "spot", Operator: "Equal", Value: "yes", Effect: "NoExecute"}}
	k.WatchNodes, k.ReplaceInterrupted, k.InterruptionGrace = false, false, 30*time.Second
	k.InterruptionTaints, k.InterruptionConditions = []string{"a/b"}, []string{"Doomed"}
	c := KubernetesConfig(k)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	type view struct {
		NS, Image, Pull, SA string
		Port                int
		Args                string
		Stop, Grace         time.Duration
		Tiny, C5, M5        kubernetes.Resources
		OnDemand, Spot, Tol string
		Watch, Replace      bool
		Taints, Conditions  string
	}
	got := view{c.Namespace, c.Image, string(c.ImagePullPolicy), c.ServiceAccountName, c.Port, fmt.Sprint(c.Args), c.StopTimeout, c.InterruptionGrace,
		c.Types["tiny"], c.Types["c5.large"], c.Types["m5.large"], fmt.Sprint(c.OnDemandNodeSelector), fmt.Sprint(c.SpotNodeSelector),
		fmt.Sprintf("%+v", c.SpotTolerations), c.WatchNodes, c.ReplaceInterrupted, fmt.Sprint(c.InterruptionTaints), fmt.Sprint(c.InterruptionConditions)}
	want := view{"prod", "reg/sloserve:v1", "Always", "worker", 9000, "[--runtime native]", 3 * time.Second, 30 * time.Second,
		kubernetes.Resources{MilliCPU: 250, MemoryMiB: 256}, kubernetes.Resources{MilliCPU: 1500, MemoryMiB: 3000},
		kubernetes.Resources{MilliCPU: 2000, MemoryMiB: 8192}, "map[]", "map[pool:cheap]",
		"[{Key:spot Operator:Equal Value:yes Effect:NoExecute TolerationSeconds:<nil>}]", false, false, "[a/b]", "[Doomed]"}
	if got != want {
		t.Errorf("KubernetesConfig (-want +got):\n- %+v\n+ %+v", want, got)
	}
}

// fakeKubelet plays the node agents of a fake cluster: every poll it binds each pending managed
// pod in ns and marks it Running and Ready at 127.0.0.1, where the test's worker listens on
// the configured worker port.
type fakeKubelet struct {
	cs   *fake.Clientset
	ns   string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	hold bool // leave pods pending
}

func startKubelet(cs *fake.Clientset, ns string) *fakeKubelet {
	k := &fakeKubelet{cs: cs, ns: ns, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-k.stop:
				return
			case <-t.C:
			}
			k.mu.Lock()
			hold := k.hold
			k.mu.Unlock()
			if hold {
				continue
			}
			ctx := context.Background()
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.Selector()})
			if err != nil {
				continue
			}
			for _, pod := range pods.Items {
				if pod.Status.Phase == corev1.PodRunning {
					continue
				}
				pod.Spec.NodeName = "node-1"
				pod.Status.Phase = corev1.PodRunning
				pod.Status.PodIP = "127.0.0.1"
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
				_, _ = cs.CoreV1().Pods(ns).Update(ctx, &pod, metav1.UpdateOptions{})
			}
		}
	}()
	return k
}

func (k *fakeKubelet) Stop() { close(k.stop); <-k.done }

func (k *fakeKubelet) setHold(h bool) { k.mu.Lock(); k.hold = h; k.mu.Unlock() }

// kubeStackConfig is a kubernetes-provider config for model m: n instances of c5.large in
// namespace ns, workers on port.
func kubeStackConfig(ns string, port, n int) config.Config {
	cfg := config.Default()
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Gateway.SyncInterval = 20 * time.Millisecond
	cfg.Controller.Policy = config.ControllerNone // a static fleet of n: the test replaces deleted pods
	cfg.Controller.SampleInterval = 50 * time.Millisecond
	cfg.Controller.Unit = 250 * time.Millisecond
	cfg.Provider.Kind = config.ProviderKubernetes
	cfg.Provider.Kubernetes.Namespace = ns
	cfg.Provider.Kubernetes.WorkerPort = port
	cfg.Provider.Kubernetes.StartTimeout = 20 * time.Second
	m := config.DefaultModel("m")
	m.Instances = n
	m.Batching.Policy = batching.PolicyFixed
	m.Batching.MaxBatch = 4
	m.Batching.MaxWait = 2 * time.Millisecond
	m.InstanceType = config.InstanceType{Name: "c5.large", PricePerHour: 0.085, LaunchDelay: 10 * time.Second}
	cfg.Models = []config.Model{m}
	return cfg
}

func podNames(t *testing.T, cs *fake.Clientset, ns string) []string {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: kubernetes.Selector()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartKubernetes runs Start with provider.kind kubernetes over a fake clientset: the model's
// pods are created with its instance type, Start returns once they are Ready, requests are served
// by the pods' address, the gateway follows a deleted pod and the controller's replacement, and a
// second Start adopts the running pods instead of launching more.
func TestStartKubernetes(t *testing.T) {
	worker := httptest.NewServer(fakeWorkerHandler())
	defer worker.Close()
	u, _ := url.Parse(worker.URL)
	port, _ := strconv.Atoi(u.Port())
	const ns = "serving"
	cs := fake.NewClientset()
	kl := startKubelet(cs, ns)
	defer kl.Stop()

	cfg := kubeStackConfig(ns, port, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := Start(ctx, cfg, StackOptions{KubernetesClient: cs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close(context.Background())
	if _, ok := st.Provider.(*kubernetes.Provider); !ok {
		t.Fatalf("Stack.Provider is %T, want *kubernetes.Provider", st.Provider)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("pods in %s (-want +got): -2 +%d", ns, len(pods.Items))
	}
	for _, p := range pods.Items {
		ct := p.Spec.Containers[0]
		if got := p.Annotations[kubernetes.AnnotationType]; got != "c5.large" {
			t.Errorf("pod %s type %q, want the model's instance_type c5.large", p.Name, got)
		}
		if cpu, mem := ct.Resources.Requests[corev1.ResourceCPU], ct.Resources.Requests[corev1.ResourceMemory]; cpu.Cmp(resource.MustParse("2")) != 0 || mem.Cmp(resource.MustParse("4Gi")) != 0 {
			t.Errorf("pod %s requests cpu %v memory %v, want c5.large's 2 and 4Gi", p.Name, cpu.String(), mem.String())
		}
		// --max-in-flight is the model's slots (1 by default): the worker enforces the share the
		// gateway replicas batch against.
		if want := []string{"--addr", "0.0.0.0:" + strconv.Itoa(port), "--models", "m", "--max-in-flight", "1"}; !slices.Equal(ct.Args, want) {
			t.Errorf("pod %s args %v, want %v", p.Name, ct.Args, want)
		}
	}
	ids, _ := st.Gateway.Instances("m")
	slices.Sort(ids)
	if want := podNames(t, cs, ns); !slices.Equal(ids, want) {
		t.Errorf("gateway instances %v, want the pods %v", ids, want)
	}
	postOnes(t, st.URL, 4)

	// A pod deleted behind the gateway's back (node drain, kubectl delete) leaves the gateway;
	// the static controller replaces it and the gateway adds the replacement.
	victim := ids[0]
	if err := cs.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gateway to drop "+victim+" and add a replacement", 20*time.Second, func() bool {
		now, _ := st.Gateway.Instances("m")
		return len(now) == 2 && !slices.Contains(now, victim)
	})
	now, _ := st.Gateway.Instances("m")
	slices.Sort(now)
	if want := podNames(t, cs, ns); !slices.Equal(now, want) {
		t.Errorf("after the replacement the gateway has %v, the namespace %v", now, want)
	}
	if _, err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := podNames(t, cs, ns); len(got) != 2 {
		t.Errorf("pods after Close: %v, want the 2 left running", got)
	}

	// A restarted serve adopts the running pods.
	before := podNames(t, cs, ns)
	st2, err := Start(ctx, cfg, StackOptions{KubernetesClient: cs})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close(context.Background())
	if after := podNames(t, cs, ns); !slices.Equal(after, before) {
		t.Errorf("restart launched pods: before %v, after %v", before, after)
	}
	ids2, _ := st2.Gateway.Instances("m")
	slices.Sort(ids2)
	if !slices.Equal(ids2, before) {
		t.Errorf("restarted gateway instances %v, want the adopted pods %v", ids2, before)
	}
}

// TestStartKubernetesNotReady: pods that never turn Ready fail Start after start_timeout, with an
// error that says how far the fleet got.
func TestStartKubernetesNotReady(t *testing.T) {
	cs := fake.NewClientset()
	kl := startKubelet(cs, "ns")
	kl.setHold(true)
	defer kl.Stop()
	cfg := kubeStackConfig("ns", 8000, 2)
	cfg.Provider.Kubernetes.StartTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err := Start(context.Background(), cfg, StackOptions{KubernetesClient: cs})
	want := "start workers: not ready within 300ms: m: 0 of 2 ready (2 launching)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start error (-want +got):\n- …%s…\n+ %v", want, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Start took %v to give up, want about start_timeout", d)
	}
}

func TestStartKubernetesBadType(t *testing.T) {
	cfg := kubeStackConfig("ns", 8000, 1)
	cfg.Models[0].InstanceType.Name = "local"
	_, err := Start(context.Background(), cfg, StackOptions{KubernetesClient: fake.NewClientset()})
	if want := `models[0].instance_type.name: "local" is not an instance type`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start error (-want +got):\n- …%s…\n+ %v", want, err)
	}
}

func TestWaitFleetCountsModelType(t *testing.T) {
	cfg := kubeStackConfig("ns", 8000, 2)
	ready := func(id, typ string) provider.Instance {
		return provider.Instance{ID: id, State: provider.StateReady, Spec: provider.Spec{Model: "m", Type: typ}}
	}
	p := staticLister{ready("a", "c5.large"), ready("b", "c5.xlarge"), {ID: "c", State: provider.StateLaunching, Spec: provider.Spec{Model: "m", Type: "c5.large"}}}
	err := waitFleet(context.Background(), cfg, p, 30*time.Millisecond, 5*time.Millisecond)
	if want := "m: 1 of 2 ready (1 launching, 1 ready)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("waitFleet error (-want +got):\n- …%s…\n+ %v", want, err)
	}
	p[2].State = provider.StateReady
	if err := waitFleet(context.Background(), cfg, p, 30*time.Millisecond, 5*time.Millisecond); err != nil {
		t.Errorf("waitFleet with 2 ready c5.large: %v", err)
	}
}

// staticLister is a provider whose instances never change.
type staticLister []provider.Instance

func (s staticLister) Launch(context.Context, provider.Spec) (provider.Instance, error) {
	return provider.Instance{}, fmt.Errorf("static")
}
func (s staticLister) Terminate(context.Context, string) error { return fmt.Errorf("static") }
func (s staticLister) Instances(context.Context) ([]provider.Instance, error) {
	return slices.Clone(s), nil
}
