//go:build e2e

package k8s

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
)

// The function tier's run on the control plane: mlp256 on one VM pod (the fleet bounded at
// one) whose worker takes 20 ms a row, SLO 3 s, function pods of 896 MB (0.51 vCPU), at most 3;
// a 150 rps burst for 4 s, three times the VM pod's nominal 50 rps.
const (
	fnModel    = "mlp256"
	fnMemoryMB = 896
	fnMax      = 3
	fnRowTime  = "20ms"
	fnSLO      = 3 * time.Second
	fnRate     = 150.0
	fnBurst    = 4 * time.Second
	// fnUnit is the controller's unit: LSTH's keep-alive of a function with no learned idle
	// times is its fallback, 4 h × unit / 1 min = 48 s.
	fnUnit     = 200 * time.Millisecond
	fnScaleIn  = 120 * time.Second
	fnReqLimit = 30 * time.Second
)

// fnConfig is `sloserve serve` with provider kubernetes in ns and the function tier on.
func fnConfig(ns string, workerPort int) config.Config {
	cfg := config.Default()
	cfg.Gateway.Addr = "127.0.0.1:0"
	cfg.Gateway.SyncInterval = 100 * time.Millisecond
	c := &cfg.Controller
	c.Policy = config.ControllerSloserve
	c.SampleInterval = 200 * time.Millisecond
	c.Unit = fnUnit
	c.MinInstances, c.MaxInstances = 1, 1
	cfg.Provider.Kind = config.ProviderKubernetes
	k := &cfg.Provider.Kubernetes
	k.Namespace = ns
	k.StartTimeout = readyWithin
	k.StopTimeout = time.Second
	k.WorkerPort = workerPort
	k.WatchNodes = false
	k.Args = []string{"--min-row-time", fnRowTime} // every worker at the nominal speed (cmd/sloserve demo's)
	cfg.Serverless = config.Serverless{Enabled: true, MemoryMB: fnMemoryMB, MaxInstances: fnMax}
	m := config.DefaultModel(fnModel)
	m.Instances, m.Slots = 1, 1
	m.SLO.Threshold, m.SLO.ThresholdMS = fnSLO, float64(fnSLO/time.Millisecond)
	m.InstanceType = config.InstanceType{Name: "c5.large", PricePerHour: 0.085, RPS: 50, LaunchDelay: 5 * time.Second}
	cfg.Models = []config.Model{m}
	return cfg
}

// podWorkers starts a real `sloserve worker` for every pod as soon as it has a loopback IP,
// with the pod's own container arguments (--addr on the pod's IP). KWOK enforces no resource
// limits, so a function pod's worker also gets its CPU share (the cpu limit, annotation
// sloserve.io/cpu-share) as --cpu-share, as the kubelet's CFS quota would hold it. It records
// each function pod's creation and the time its worker was started.
type podWorkers struct {
	mu      sync.Mutex
	started map[string]time.Time
	created map[string]time.Time // function pods
}

func (w *podWorkers) run(ctx context.Context, t *testing.T, admin clientset.Interface, ns, bin, dir string) {
	for ctx.Err() == nil {
		pods, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.Selector()})
		for _, pod := range podsOrNone(pods, err) {
			w.mu.Lock()
			_, up := w.started[pod.Name]
			if kubernetes.IsFunction(&pod) {
				w.created[pod.Name] = pod.CreationTimestamp.Time
			}
			w.mu.Unlock()
			if up || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
				continue
			}
			if !net.ParseIP(pod.Status.PodIP).IsLoopback() {
				t.Errorf("pod %s has IP %s: the control plane must give pods loopback IPs", pod.Name, pod.Status.PodIP)
				continue
			}
			start(t, dir, "worker-"+pod.Name, bin, workerArgs(&pod)...)
			w.mu.Lock()
			w.started[pod.Name] = time.Now()
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func podsOrNone(l *corev1.PodList, err error) []corev1.Pod {
	if err != nil {
		return nil
	}
	return l.Items
}

// workerArgs is `worker` with the pod's container arguments, listening on the pod's IP.
func workerArgs(pod *corev1.Pod) []string {
	args := append([]string{"worker"}, pod.Spec.Containers[0].Args...)
	if i := slices.Index(args, "--addr"); i >= 0 {
		_, port, _ := net.SplitHostPort(args[i+1])
		args[i+1] = net.JoinHostPort(pod.Status.PodIP, port)
	}
	if s, err := strconv.ParseFloat(pod.Annotations[kubernetes.AnnotationCPUShare], 64); err == nil && s < 1 {
		args = append(args, "--cpu-share", pod.Annotations[kubernetes.AnnotationCPUShare])
	}
	return append(args, "--log-level", "warn")
}

// functionPods returns the function pods of ns (not terminating).
func functionPods(ctx context.Context, admin clientset.Interface, ns string) ([]corev1.Pod, error) {
	l, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelComponent + "=" + kubernetes.ComponentFunction})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestFunctionTierOnControlPlane runs the serving stack (app.Start, as `sloserve serve` does)
// with provider kubernetes and the function tier on: the pre-warmed function pod is released
// after LSTH's keep-alive (0 function pods while idle); a burst above the VM pod's capacity
// spills to the function tier, which creates function pods (labelled, sized by memory) and
// buffers the spilled requests while they cold-start, then answers them; every request is
// answered or refused (none lost); the cold starts are counted and measured and the
// invocations billed per GB-s; after the idle window the tier is back to 0 pods.
func TestFunctionTierOnControlPlane(t *testing.T) {
	base := adminConfig(t)
	admin, err := clientset.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ns, sacs := setupNamespace(t, ctx, admin, base)
	bin, dir := sloserveBin(t), t.TempDir()
	w := &podWorkers{started: map[string]time.Time{}, created: map[string]time.Time{}}
	wctx, wstop := context.WithCancel(ctx)
	defer wstop()
	go w.run(wctx, t, admin, ns, bin, dir)

	cfg := fnConfig(ns, freePort(t))
	vmPod(t, ctx, sacs, cfg, w)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := app.Start(ctx, cfg, app.StackOptions{Logger: log, KubernetesClient: sacs})
	if err != nil {
		t.Fatalf("app.Start with provider kubernetes and serverless: %v", err)
	}
	defer func() { st.Close(context.Background()) }()
	if st.Functions == nil || st.Functions.Enforcement() != kubernetes.EnforcePodLimits {
		t.Fatalf("function tier %v; want the kubernetes one", st.Functions)
	}
	pre := st.Functions.Stats(fnModel)
	t.Logf("start: pre-warmed function pod, cold start %.2f s", pre.ColdStartSeconds)
	checkFunctionPods(t, ctx, admin, ns)

	// 1. Idle: LSTH releases the pre-warmed pod.
	idle := waitFor(t, "0 function pods while idle", fnScaleIn, func() (bool, error) {
		pods, err := functionPods(ctx, admin, ns)
		return err == nil && len(pods) == 0, err
	})
	t.Logf("idle: 0 function pods %v after start", idle.Round(100*time.Millisecond))

	// 2. The burst.
	before := st.Functions.Stats(fnModel)
	c0, _ := st.Gateway.FunctionCounts(fnModel)
	burstAt := time.Now()
	out := burst(st.URL, fnRate, fnBurst)
	after := st.Functions.Stats(fnModel)
	c1, _ := st.Gateway.FunctionCounts(fnModel)
	codes := map[int]int{}
	for _, o := range out {
		codes[o.code]++
	}
	t.Logf("burst: %d requests: %v (0 = no answer); routing spilled %d served %d rejected %d vm %d",
		len(out), codes, c1.Spilled-c0.Spilled, c1.Served-c0.Served, c1.Rejected-c0.Rejected, c1.VM-c0.VM)
	if codes[0] != 0 || codes[http.StatusOK]+codes[http.StatusTooManyRequests]+codes[http.StatusGatewayTimeout] != len(out) {
		t.Errorf("answers %v; want every request answered 200, 429 or 504 (none lost)", codes)
	}
	if c1.Served-c0.Served <= 0 {
		t.Errorf("function tier served %d requests of the burst; want > 0", c1.Served-c0.Served)
	}
	cold := after.ColdStarts - before.ColdStarts
	coldSec := (after.ColdStartSeconds - before.ColdStartSeconds) / float64(max(cold, 1))
	gbs := after.BilledGBSeconds - before.BilledGBSeconds
	t.Logf("burst: %d cold starts (pod create → worker ready) of mean %.2f s; %d invocations billed %.4f GB-s, $%.8f",
		cold, coldSec, after.Invocations-before.Invocations, gbs, after.CostUSD-before.CostUSD)
	if cold < 1 || coldSec <= 0 || gbs <= 0 || after.CostUSD <= before.CostUSD {
		t.Errorf("stats %+v → %+v; want cold starts counted and measured, GB-s billed", before, after)
	}
	w.mu.Lock()
	var made []string
	for name, at := range w.created {
		if !at.Before(burstAt.Truncate(time.Second)) {
			made = append(made, name)
		}
	}
	w.mu.Unlock()
	if len(made) < 1 || len(made) > fnMax {
		t.Errorf("function pods created during the burst %v; want 1..%d", made, fnMax)
	}
	released := after.AfterColdStart - before.AfterColdStart
	t.Logf("burst: %d function pods %v; %d batches buffered through a pod's cold start, then answered by it", len(made), made, released)
	if released < 1 {
		t.Errorf("no batch waited through a cold start and was answered; want the spilled requests buffered, then released to the new pod")
	}
	checkFunctionPods(t, ctx, admin, ns)

	// 3. Idle again: back to 0 function pods.
	down := waitFor(t, "0 function pods after the burst", fnScaleIn, func() (bool, error) {
		pods, err := functionPods(ctx, admin, ns)
		return err == nil && len(pods) == 0, err
	})
	if s := st.Functions.Stats(fnModel); s.Live != 0 {
		t.Errorf("after the idle window: %d live function instances; want 0", s.Live)
	}
	t.Logf("after the burst: 0 function pods %v after its end", down.Round(100*time.Millisecond))
}

// vmPod launches the model's VM pod ahead of the stack, which adopts it (as a restarted serve
// does), and waits until its worker answers: the stack adds its instances as soon as the pods
// are Ready, which KWOK makes them before the test has started their workers.
func vmPod(t *testing.T, ctx context.Context, cs clientset.Interface, cfg config.Config, w *podWorkers) {
	t.Helper()
	p, err := kubernetes.New(cs, app.KubernetesConfig(cfg.Provider.Kubernetes), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := cfg.Models[0]
	in, err := p.Launch(ctx, provider.Spec{Model: m.Name, Type: m.InstanceType.Name, Tier: provider.TierVM})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the VM pod's worker", readyWithin, func() (bool, error) {
		l, err := p.Instances(ctx)
		for _, x := range l {
			if x.ID == in.ID && x.State == provider.StateReady && httpOK(x.Addr+"/v2/health/ready") {
				return true, nil
			}
		}
		return false, err
	})
}

// checkFunctionPods checks the function pods' labels and resources: memory = the size, cpu by
// Lambda's rule (896 / 1769 vCPU).
func checkFunctionPods(t *testing.T, ctx context.Context, admin clientset.Interface, ns string) {
	t.Helper()
	pods, err := functionPods(ctx, admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		lim := p.Spec.Containers[0].Resources.Limits
		if p.Labels[kubernetes.LabelTier] != "serverless" || p.Labels[kubernetes.LabelMemory] != strconv.Itoa(fnMemoryMB) ||
			lim.Memory().Value() != fnMemoryMB<<20 || lim.Cpu().MilliValue() != 507 {
			t.Errorf("function pod %s: labels %v, limits %v; want tier serverless, %d MB, 507m", p.Name, p.Labels, lim, fnMemoryMB)
		}
	}
}

// fnOutcome is one burst request's fate; code 0 means no HTTP answer.
type fnOutcome struct {
	sent, done time.Time
	code       int
}

// burst sends open-loop requests at rate for d and waits for every answer.
func burst(url string, rate float64, d time.Duration) []fnOutcome {
	n := int(rate * d.Seconds())
	out := make([]fnOutcome, n)
	client := &http.Client{Timeout: fnReqLimit}
	body := inferBody()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := fnOutcome{sent: time.Now()}
			resp, err := client.Post(url+"/v2/models/"+fnModel+"/infer", "application/json", bytes.NewReader(body))
			if err == nil {
				o.code = resp.StatusCode
				resp.Body.Close()
			}
			o.done = time.Now()
			out[i] = o
		}()
	}
	wg.Wait()
	return out
}
