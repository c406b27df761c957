package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sloserve/sloserve/internal/provider"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func testConfig() Config {
	c := DefaultConfig()
	c.Namespace = "ns"
	c.Types = map[string]Resources{
		"c5.large":   {MilliCPU: 2000, MemoryMiB: 4096},
		"p2.xlarge":  {MilliCPU: 4000, MemoryMiB: 61 << 10, GPUs: 1},
		"tiny":       {},
		"m5.2xlarge": {MilliCPU: 8000, MemoryMiB: 32 << 10},
	}
	return c
}

// startProvider returns a started provider over a fake clientset holding objs; Step is left to
// the test.
func startProvider(t *testing.T, cfg Config, objs ...any) (*Provider, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Node:
			_, err = cs.CoreV1().Nodes().Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.Pod:
			_, err = cs.CoreV1().Pods(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("seed %T: %v", o, err)
		}
	}
	p, err := New(cs, cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	p.manual = true
	p.now = func() time.Time { return t0 }
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, cs
}

// kubelet plays the node agent: it binds the pod to node and marks it Running and Ready.
func kubelet(t *testing.T, cs *fake.Clientset, ns, name, node, ip string) {
	t.Helper()
	ctx := context.Background()
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	pod.Spec.NodeName = node
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = ip
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(7 * time.Second))}}
	if _, err := cs.CoreV1().Pods(ns).Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update pod %s: %v", name, err)
	}
}

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
}

func states(t *testing.T, p *Provider) map[string]provider.State {
	t.Helper()
	ins, err := p.Instances(context.Background())
	if err != nil {
		t.Fatalf("Instances: %v", err)
	}
	out := map[string]provider.State{}
	for _, in := range ins {
		out[in.ID] = in.State
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // substring of the error; "" = valid
	}{
		{"default", func(*Config) {}, ""},
		{"bad namespace", func(c *Config) { c.Namespace = "Not_OK" }, "namespace"},
		{"no image", func(c *Config) { c.Image = "" }, "image"},
		{"no command", func(c *Config) { c.Command = nil }, "command"},
		{"port zero", func(c *Config) { c.Port = 0 }, "port"},
		{"no types", func(c *Config) { c.Types = nil }, "types"},
		{"negative cpu", func(c *Config) { c.Types = map[string]Resources{"x": {MilliCPU: -1}} }, "types[x]"},
		{"negative stop", func(c *Config) { c.StopTimeout = -time.Second }, "stop_timeout"},
		{"zero resync", func(c *Config) { c.Resync = 0 }, "resync"},
		{"nothing to watch", func(c *Config) { c.InterruptionTaints, c.InterruptionConditions = nil, nil }, "interruption_taints"},
		{"bad selector value", func(c *Config) { c.SpotNodeSelector = map[string]string{"pool": "a b"} }, "spot_node_selector[pool]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestBuildPod(t *testing.T) {
	cfg := testConfig()
	for _, tc := range []struct {
		name         string
		spec         provider.Spec
		avoid        []string
		wantSelector map[string]string
		wantTolerate []string
		wantLimits   map[corev1.ResourceName]string
		wantAnn      map[string]string
	}{
		{
			name:         "on-demand cpu",
			spec:         provider.Spec{Model: "mlp256", Type: "c5.large", Tier: provider.TierVM, MaxBatch: 8, MaxWait: 20 * time.Millisecond},
			wantSelector: map[string]string{LabelCapacity: CapacityOnDemand},
			wantLimits:   map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourceMemory: "4Gi"},
			wantAnn:      map[string]string{AnnotationModel: "mlp256", AnnotationType: "c5.large", AnnotationMaxBatch: "8", AnnotationMaxWait: "20ms", AnnotationLaunched: "2026-05-01T12:00:00Z"},
		},
		{
			name:         "spot gpu avoiding interrupted nodes",
			spec:         provider.Spec{Model: "ResNet_50", Type: "p2.xlarge/spot"},
			avoid:        []string{"n2", "n1"},
			wantSelector: map[string]string{LabelCapacity: CapacitySpot},
			wantTolerate: []string{DefaultSpotTaint, string(GPUResource)},
			wantLimits:   map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "61Gi", GPUResource: "1"},
			wantAnn:      map[string]string{AnnotationModel: "ResNet_50", AnnotationType: "p2.xlarge/spot", AnnotationLaunched: "2026-05-01T12:00:00Z"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.spec.Type
			if b, ok := cutSpot(base); ok {
				base = b
			}
			pod := cfg.buildPod(podName(tc.spec.Model, "abcd1234"), tc.spec, cfg.Types[base], t0, tc.avoid, nil)
			if d := diff(tc.wantSelector, pod.Spec.NodeSelector); d != "" {
				t.Errorf("node selector (-want +got):\n%s", d)
			}
			var tol []string
			for _, x := range pod.Spec.Tolerations {
				tol = append(tol, x.Key)
			}
			if d := diff(tc.wantTolerate, tol); d != "" {
				t.Errorf("tolerations (-want +got):\n%s", d)
			}
			ct := pod.Spec.Containers[0]
			got := map[corev1.ResourceName]string{}
			for k, v := range ct.Resources.Limits {
				got[k] = v.String()
				if r := ct.Resources.Requests[k]; r.Cmp(v) != 0 {
					t.Errorf("request %s = %s, limit %s: want equal (Guaranteed QoS)", k, r.String(), v.String())
				}
			}
			if d := diff(tc.wantLimits, got); d != "" {
				t.Errorf("limits (-want +got):\n%s", d)
			}
			if d := diff(tc.wantAnn, pod.Annotations); d != "" {
				t.Errorf("annotations (-want +got):\n%s", d)
			}
			if pod.Labels[LabelManagedBy] != ManagedBy || pod.Labels[LabelModel] == "" || pod.Labels[LabelType] == "" || pod.Labels[LabelTier] != "vm" {
				t.Errorf("labels = %v, want managed-by, model, type and tier", pod.Labels)
			}
			wantArgs := []string{"--addr", "0.0.0.0:8000", "--models", tc.spec.Model}
			if d := diff(wantArgs, ct.Args); d != "" {
				t.Errorf("args (-want +got):\n%s", d)
			}
			var gotAvoid []string
			if a := pod.Spec.Affinity; a != nil {
				gotAvoid = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values
			}
			if d := diff(slices.Sorted(slices.Values(tc.avoid)), gotAvoid); d != "" {
				t.Errorf("avoided nodes (-want +got):\n%s", d)
			}
			if got := SpecFromPod(pod); got.Tier == "" {
				got.Tier = provider.TierVM
			}
			spec := tc.spec
			if spec.Tier == "" {
				spec.Tier = provider.TierVM
			}
			if d := diff(spec, SpecFromPod(pod)); d != "" {
				t.Errorf("SpecFromPod (-want +got):\n%s", d)
			}
		})
	}
}

// diff returns "" when want and got are deeply equal, else both in (-want +got) form.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("- %+v\n+ %+v", want, got)
}

func cutSpot(s string) (string, bool) {
	if len(s) > 5 && s[len(s)-5:] == "/spot" {
		return s[:len(s)-5], true
	}
	return s, false
}

func TestPodName(t *testing.T) {
	for _, tc := range []struct{ model, want string }{
		{"mlp256", "sloserve-mlp256-x"},
		{"ResNet_50.v2", "sloserve-resnet-50-v2-x"},
		{"__", "sloserve-model-x"},
		{"a-very-long-model-name-that-goes-on-and-on-forever-and-ever", "sloserve-a-very-long-model-name-that-goes-on-and-x"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			if got := podName(tc.model, "x"); got != tc.want {
				t.Errorf("podName(%q) = %q, want %q", tc.model, got, tc.want)
			}
		})
	}
}

func TestInstanceFromPod(t *testing.T) {
	cfg := testConfig()
	spec := provider.Spec{Model: "m", Type: "c5.large", Tier: provider.TierVM}
	now := metav1.NewTime(t0)
	readyCond := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	for _, tc := range []struct {
		name        string
		mod         func(*corev1.Pod)
		interrupted bool
		want        provider.State
		wantAddr    string
	}{
		{"pending", func(*corev1.Pod) {}, false, provider.StateLaunching, ""},
		{"running not ready", func(p *corev1.Pod) { p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "10.0.0.5" }, false, provider.StateLaunching, "http://10.0.0.5:8000"},
		{"ready", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.PodIP, p.Status.Conditions = corev1.PodRunning, "10.0.0.5", readyCond
		}, false, provider.StateReady, "http://10.0.0.5:8000"},
		{"ready ipv6", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.PodIP, p.Status.Conditions = corev1.PodRunning, "fd00::5", readyCond
		}, false, provider.StateReady, "http://[fd00::5]:8000"},
		{"ready on interrupted node", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.PodIP, p.Status.Conditions = corev1.PodRunning, "10.0.0.5", readyCond
		}, true, provider.StateInterrupted, "http://10.0.0.5:8000"},
		{"annotated interrupted", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.PodIP, p.Status.Conditions = corev1.PodRunning, "10.0.0.5", readyCond
			p.Annotations[AnnotationInterrupted] = t0.Format(time.RFC3339Nano)
		}, false, provider.StateInterrupted, "http://10.0.0.5:8000"},
		{"deleting", func(p *corev1.Pod) {
			p.Status.Phase, p.Status.PodIP, p.Status.Conditions = corev1.PodRunning, "10.0.0.5", readyCond
			p.DeletionTimestamp = &now
		}, true, provider.StateDraining, "http://10.0.0.5:8000"},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false, provider.StateTerminated, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := cfg.buildPod("p", spec, cfg.Types["c5.large"], t0, nil, nil)
			tc.mod(pod)
			got := InstanceFromPod(pod, tc.interrupted)
			if got.State != tc.want || got.Addr != tc.wantAddr {
				t.Errorf("InstanceFromPod: state %q addr %q, want %q %q", got.State, got.Addr, tc.want, tc.wantAddr)
			}
			if !got.Launched.Equal(t0) {
				t.Errorf("Launched = %v, want %v", got.Launched, t0)
			}
		})
	}
}

func TestLaunchReadyTerminate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, cs := startProvider(t, testConfig())
		ctx := context.Background()
		spec := provider.Spec{Model: "mlp256", Type: "c5.large/spot", Tier: provider.TierVM, MaxBatch: 16}
		in, err := p.Launch(ctx, spec)
		if err != nil {
			t.Fatalf("Launch: %v", err)
		}
		if in.State != provider.StateLaunching || in.Spec != spec {
			t.Errorf("Launch = %+v, want launching with spec %+v", in, spec)
		}
		synctest.Wait()
		if d := diff(map[string]provider.State{in.ID: provider.StateLaunching}, states(t, p)); d != "" {
			t.Errorf("after launch (-want +got):\n%s", d)
		}
		kubelet(t, cs, "ns", in.ID, "n1", "10.2.0.7")
		synctest.Wait()
		ins, _ := p.Instances(ctx)
		if len(ins) != 1 || ins[0].State != provider.StateReady || ins[0].Addr != "http://10.2.0.7:8000" || ins[0].Spec != spec {
			t.Errorf("after kubelet: %+v, want one ready instance at http://10.2.0.7:8000", ins)
		}
		if err := p.Terminate(ctx, in.ID); err != nil {
			t.Fatalf("Terminate: %v", err)
		}
		synctest.Wait()
		if d := diff(map[string]provider.State{}, states(t, p)); d != "" {
			t.Errorf("after terminate (-want +got):\n%s", d)
		}
		if err := p.Terminate(ctx, in.ID); !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("Terminate twice = %v, want ErrNotFound", err)
		}
	})
}

func TestLaunchErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := startProvider(t, testConfig())
		for _, tc := range []struct {
			name string
			spec provider.Spec
			want error
		}{
			{"unknown type", provider.Spec{Model: "m", Type: "x9.huge"}, ErrUnknownType},
			{"no model", provider.Spec{Type: "c5.large"}, nil},
			{"negative batch", provider.Spec{Model: "m", Type: "c5.large", MaxBatch: -1}, nil},
		} {
			// t.Run is not allowed inside a synctest bubble; name the case in the message.
			_, err := p.Launch(context.Background(), tc.spec)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%s: Launch(%+v) = %v, want error %v", tc.name, tc.spec, err, tc.want)
			}
		}
	})
}

func TestNotStarted(t *testing.T) {
	p, err := New(fake.NewClientset(), testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Launch(context.Background(), provider.Spec{Model: "m", Type: "c5.large"}); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Launch before Start = %v, want ErrNotStarted", err)
	}
}

func TestTerminateForeignPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Labels: map[string]string{LabelManagedBy: ManagedBy}}}
		p, cs := startProvider(t, testConfig(), foreign)
		synctest.Wait()
		if err := p.Terminate(context.Background(), "db"); !errors.Is(err, provider.ErrNotFound) {
			t.Errorf("Terminate(foreign) = %v, want ErrNotFound", err)
		}
		if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "db", metav1.GetOptions{}); err != nil {
			t.Errorf("foreign pod deleted: %v", err)
		}
	})
}

func TestInterruption(t *testing.T) {
	taint := corev1.Taint{Key: DefaultInterruptionTaint, Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name      string
		mark      func(*corev1.Node)
		replace   bool
		advance   time.Duration // after the notice, before the second Step
		readyRepl bool
		wantGone  bool // the interrupted pod is deleted by the second Step
	}{
		{"taint, replacement ready", func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taint) }, true, time.Second, true, true},
		{"taint, replacement pending", func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taint) }, true, time.Second, false, false},
		{"taint, replacement pending past grace", func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, taint) }, true, 2 * time.Minute, false, true},
		{"condition, no replacement", func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: DefaultInterruptionCondition, Status: corev1.ConditionTrue})
		}, false, time.Minute, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testConfig()
				cfg.ReplaceInterrupted = tc.replace
				p, cs := startProvider(t, cfg, node("n1"), node("n2"))
				ctx := context.Background()
				old, err := p.Launch(ctx, provider.Spec{Model: "m", Type: "c5.large/spot", MaxBatch: 4})
				if err != nil {
					t.Fatal(err)
				}
				kubelet(t, cs, "ns", old.ID, "n1", "10.2.0.1")
				synctest.Wait()
				if err := p.Step(ctx, t0); err != nil {
					t.Fatalf("Step before notice: %v", err)
				}
				if d := diff(map[string]provider.State{old.ID: provider.StateReady}, states(t, p)); d != "" {
					t.Fatalf("before notice (-want +got):\n%s", d)
				}

				n1, _ := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
				tc.mark(n1)
				if _, err := cs.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if got := states(t, p)[old.ID]; got != provider.StateInterrupted {
					t.Errorf("state on marked node before Step = %q, want interrupted", got)
				}
				if err := p.Step(ctx, t0); err != nil {
					t.Fatalf("Step at notice: %v", err)
				}
				synctest.Wait()
				pod, _ := cs.CoreV1().Pods("ns").Get(ctx, old.ID, metav1.GetOptions{})
				if pod.Annotations[AnnotationInterrupted] == "" {
					t.Errorf("interrupted pod not annotated: %v", pod.Annotations)
				}
				repl := pod.Annotations[AnnotationReplacement]
				if (repl != "") != tc.replace {
					t.Fatalf("replacement %q, want one: %v", repl, tc.replace)
				}
				if tc.replace {
					rp, err := cs.CoreV1().Pods("ns").Get(ctx, repl, metav1.GetOptions{})
					if err != nil {
						t.Fatalf("replacement pod: %v", err)
					}
					if d := diff(SpecFromPod(pod), SpecFromPod(rp)); d != "" {
						t.Errorf("replacement spec (-want +got):\n%s", d)
					}
					if got := rp.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values; !slices.Equal(got, []string{"n1"}) {
						t.Errorf("replacement avoids %v, want [n1]", got)
					}
					if tc.readyRepl {
						kubelet(t, cs, "ns", repl, "n2", "10.2.0.2")
						synctest.Wait()
					}
				}
				// A second Step at the same notice changes nothing new.
				if err := p.Step(ctx, t0.Add(tc.advance)); err != nil {
					t.Fatalf("second Step: %v", err)
				}
				synctest.Wait()
				_, err = cs.CoreV1().Pods("ns").Get(ctx, old.ID, metav1.GetOptions{})
				if gone := err != nil; gone != tc.wantGone {
					t.Errorf("interrupted pod gone = %v, want %v", gone, tc.wantGone)
				}
				pods, _ := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
				want := 1
				if tc.replace {
					want++
				}
				if tc.wantGone {
					want--
				}
				if len(pods.Items) != want {
					t.Errorf("%d pods after second Step, want %d (no duplicate replacements)", len(pods.Items), want)
				}
			})
		})
	}
}

func ExampleSelector() {
	fmt.Println(Selector())
	// Output: app.kubernetes.io/managed-by=sloserve
}

// A model named in MaxInFlight gets `--max-in-flight <slots>` after the address and model and
// before the configured Args (which may override it); another model gets no limit.
func TestPodMaxInFlight(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxInFlight = map[string]int{"mlp": 3}
	cfg.Args = []string{"--runtime", "native"}
	for _, tc := range []struct {
		model string
		want  []string
	}{
		{"mlp", []string{"--addr", "0.0.0.0:8000", "--models", "mlp", "--max-in-flight", "3", "--runtime", "native"}},
		{"other", []string{"--addr", "0.0.0.0:8000", "--models", "other", "--runtime", "native"}},
	} {
		pod := cfg.buildPod("p", provider.Spec{Model: tc.model, Type: "c5.large"}, Resources{}, time.Time{}, nil, nil)
		if d := diff(tc.want, pod.Spec.Containers[0].Args); d != "" {
			t.Errorf("model %s: args (-want +got):\n%s", tc.model, d)
		}
	}
}

// TestLaunchBeforeTheCacheShowsIt holds the pod watch back, as a loaded API server or informer
// does: a pod just launched is listed (launching) before its watch event arrives, once after it
// does, no longer once Terminate deletes it, and not past expectTTL when someone else deleted it
// before the cache ever saw it. Without the expectation a controller step in that window saw a
// fleet one short and launched again (TestReplicasFailover: 4 pods for a fleet of 3).
func TestLaunchBeforeTheCacheShowsIt(t *testing.T) {
	cs := fake.NewClientset()
	held := watch.NewRaceFreeFake()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, held, nil })
	p, err := New(cs, testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p.manual = true
	now := t0
	p.now = func() time.Time { return now }
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	spec := provider.Spec{Model: "m", Type: "c5.large", Tier: provider.TierVM}
	a, err := p.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(map[string]provider.State{a.ID: provider.StateLaunching}, states(t, p)); d != "" {
		t.Errorf("launched, watch held (-want +got):\n%s", d)
	}
	pod, err := cs.CoreV1().Pods("ns").Get(ctx, a.ID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held.Add(pod)
	waitFor(t, func() bool { _, err := p.pods.Pods("ns").Get(a.ID); return err == nil })
	if got := states(t, p); len(got) != 1 {
		t.Errorf("after the watch event: %v, want %s once", got, a.ID)
	}
	// Deleted by someone else before the cache saw it: listed until expectTTL, then not.
	b, err := p.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("ns").Delete(ctx, b.ID, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := states(t, p); len(got) != 2 {
		t.Errorf("within expectTTL: %v, want %s and %s", got, a.ID, b.ID)
	}
	now = now.Add(expectTTL + time.Second)
	if d := diff(map[string]provider.State{a.ID: provider.StateLaunching}, states(t, p)); d != "" {
		t.Errorf("past expectTTL (-want +got):\n%s", d)
	}
	// Terminated before the cache saw it: gone at once.
	c, err := p.Launch(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if d := diff(map[string]provider.State{a.ID: provider.StateLaunching}, states(t, p)); d != "" {
		t.Errorf("after Terminate (-want +got):\n%s", d)
	}
}

// waitFor polls cond every millisecond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 10000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("condition not met within 10 s")
}
