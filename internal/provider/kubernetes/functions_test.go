package kubernetes

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/provider"
)

// TestFunctionPodSpec: a function pod of 896 MB asks for (requests = limits) 896 MiB and
// 896/1769 of a vCPU (507m), is labelled tier serverless, component function and its memory,
// carries its CPU share, and the VM provider does not count it as one of its instances.
func TestFunctionPodSpec(t *testing.T) {
	c := testConfig()
	pod := c.FunctionPod("sloserve-m-fn-1", "m", 896, cost.DefaultCatalog().Serverless, t0)
	ct := pod.Spec.Containers[0]
	for _, rl := range []corev1.ResourceList{ct.Resources.Requests, ct.Resources.Limits} {
		if cpu, mem := rl.Cpu().MilliValue(), rl.Memory().Value(); cpu != 507 || mem != 896<<20 {
			t.Errorf("resources cpu %dm memory %d; want 507m and 896 MiB", cpu, mem)
		}
	}
	want := map[string]string{LabelComponent: ComponentFunction, LabelTier: string(provider.TierServerless), LabelMemory: "896", LabelManagedBy: ManagedBy}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if got := pod.Annotations[AnnotationCPUShare]; got != "0.5065" {
		t.Errorf("cpu share annotation %q, want 0.5065", got)
	}
	if i := slices.Index(ct.Args, "--threads"); i < 0 || ct.Args[i+1] != "1" {
		t.Errorf("args %v; want --threads 1", ct.Args)
	}
	if IsManaged(pod) || !IsFunction(pod) {
		t.Errorf("IsManaged %v, IsFunction %v; want a function pod outside the VM fleet", IsManaged(pod), IsFunction(pod))
	}
}

// TestFunctionTierPods: an invocation creates a function pod and waits until it is Ready and
// its worker answers (the cold start, measured), is billed per GB-s and request, and the pod
// is deleted once idle past the keep-alive (scale to zero).
func TestFunctionTierPods(t *testing.T) {
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer worker.Close()
	_, port, _ := net.SplitHostPort(worker.Listener.Addr().String())
	cs := fake.NewClientset()
	cfg := FunctionConfig{Pods: testConfig(), Tier: cost.DefaultCatalog().Serverless, MaxInstances: 2, ReapEvery: 20 * time.Millisecond,
		RunGap: 20 * time.Millisecond, StartTimeout: 10 * time.Second, KeepAlive: func() keepalive.Policy { return &keepalive.Fixed{KeepAlive: 200 * time.Millisecond} }}
	cfg.Pods.Port, _ = strconv.Atoi(port)
	ft, err := NewFunctionTier(cs, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { // the scheduler and kubelet: the pod is Ready 300 ms after its creation
		for ctx.Err() == nil {
			pods, _ := cs.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
			for _, p := range pods.Items {
				if p.Status.PodIP == "" {
					time.Sleep(300 * time.Millisecond)
					p.Status.Phase, p.Status.PodIP = corev1.PodRunning, "127.0.0.1"
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
					_, _ = cs.CoreV1().Pods("ns").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var addr string
	inv, err := ft.Invoke(ctx, "m", 896, func(_ context.Context, a string) error { addr = a; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Cold || inv.ColdStart < 300*time.Millisecond || addr != "http://127.0.0.1:"+port {
		t.Errorf("invocation %+v at %q; want a cold start ≥ 300 ms on the pod's address", inv, addr)
	}
	pod, err := cs.CoreV1().Pods("ns").Get(ctx, inv.Instance, metav1.GetOptions{})
	if err != nil || !IsFunction(pod) {
		t.Fatalf("pod %s: %v; want a function pod", inv.Instance, err)
	}
	s := ft.Stats("m")
	if s.ColdStarts != 1 || s.Invocations != 1 || s.BilledGBSeconds <= 0 || s.CostUSD < cfg.Tier.PricePerInvocation || s.Live != 1 {
		t.Errorf("stats %+v; want one cold start, one billed invocation, one live pod", s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ft.Stats("m").Live > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cs.CoreV1().Pods("ns").Get(ctx, inv.Instance, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod %s after the keep-alive: %v; want it deleted (scaled to zero)", inv.Instance, err)
	}
}
