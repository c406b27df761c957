package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/functions"
)

// The function tier (provider.TierServerless) on Kubernetes: internal/provider/functions'
// pools (keep-alive, cold starts, billing per invocation: BATCH Eq. 1) over pods that scale to
// zero, one pod per function instance, as Knative Serving's revisions scale to zero behind its
// activator. A function pod is labelled LabelComponent=ComponentFunction, LabelTier=serverless
// and LabelMemory; it asks for (requests = limits) memory = its size and CPU following
// Lambda's rule, one vCPU at cost.Serverless.FullVCPUMemoryMB (1769 MB), which the kubelet
// enforces as a CFS quota. Its cold start is measured from the pod's creation until the
// worker in it answers /v2/health/ready (scheduled, started, model loaded); released pods are
// deleted. The VM provider (Provider) ignores function pods (IsManaged).

// Function pods' labels and annotations.
const (
	// ComponentFunction is LabelComponent's value on function pods ("worker" on VM pods).
	ComponentFunction = "function"
	// LabelMemory is a function pod's memory size in MB.
	LabelMemory = "sloserve.io/memory-mb"
	// AnnotationCPUShare is a function pod's share of one vCPU (its cpu limit), as the local
	// tier's `worker --cpu-share` takes it.
	AnnotationCPUShare = "sloserve.io/cpu-share"
	// EnvCPUShare carries AnnotationCPUShare to the worker.
	EnvCPUShare = "SLOSERVE_CPU_SHARE"
)

// EnforcePodLimits is the function tier's CPU enforcement on Kubernetes.
const EnforcePodLimits = "pod resources.limits.cpu (kubelet CFS quota)"

// FunctionConfig configures the function tier on Kubernetes.
type FunctionConfig struct {
	// Pods is the provider configuration function pods are made with (namespace, image,
	// command, args, port, service account, stop timeout); Types and the node selectors of
	// the on-demand pool apply as for VM pods.
	Pods Config
	// Tier is the catalog's serverless tier: prices, granularity, the full-vCPU memory.
	Tier cost.Serverless
	// MaxInstances, KeepAlive, ReapEvery and RunGap are functions.Config's.
	MaxInstances int
	KeepAlive    func() keepalive.Policy
	ReapEvery    time.Duration
	RunGap       time.Duration
	// StartTimeout bounds a cold start (pod creation to worker ready); default 2 min.
	StartTimeout time.Duration
	// Probe is the HTTP client of the readiness probes; nil means one with a 1 s timeout.
	Probe *http.Client
}

// NewFunctionTier returns a function tier of pods made through client; log may be nil. Close
// deletes the pods it made.
func NewFunctionTier(client clientset.Interface, cfg FunctionConfig, log *slog.Logger) (*functions.Tier, error) {
	if client == nil {
		return nil, errors.New("function tier: nil kubernetes client")
	}
	cfg.Pods.Types = map[string]Resources{"function": {}} // Validate wants one; function pods size by memory
	if err := cfg.Pods.Validate(); err != nil {
		return nil, fmt.Errorf("function tier: %w", err)
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if cfg.Probe == nil {
		cfg.Probe = &http.Client{Timeout: time.Second}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &podRuntime{client: client, cfg: cfg, log: log, addrs: map[string]string{}}
	return functions.New(functions.Config{Tier: cfg.Tier, MaxInstances: cfg.MaxInstances, KeepAlive: cfg.KeepAlive,
		ReapEvery: cfg.ReapEvery, RunGap: cfg.RunGap}, rt, log)
}

// podRuntime runs function instances as pods.
type podRuntime struct {
	client clientset.Interface
	cfg    FunctionConfig
	log    *slog.Logger

	mu    sync.Mutex
	addrs map[string]string // live pods this runtime made → the worker's address
}

// Enforcement implements functions.Runtime.
func (*podRuntime) Enforcement() string { return EnforcePodLimits }

// FunctionPod returns the pod of a function instance of model with memoryMB under tier's CPU
// rule: requests = limits = memoryMB MiB and the CPU share in millicores.
func (c *Config) FunctionPod(name, model string, memoryMB int, tier cost.Serverless, launched time.Time) *corev1.Pod {
	share := tier.CPUShare(memoryMB)
	res := Resources{MilliCPU: max(1, int64(math.Round(share*1000))), MemoryMiB: int64(memoryMB)}
	spec := provider.Spec{Model: model, Type: fmt.Sprintf("lambda-%dmb", memoryMB), Tier: provider.TierServerless, MemoryMB: memoryMB}
	pod := c.buildPod(name, spec, res, launched, nil, nil)
	pod.Labels[LabelComponent] = ComponentFunction
	pod.Labels[LabelMemory] = strconv.Itoa(memoryMB)
	shareText := strconv.FormatFloat(share, 'f', 4, 64)
	pod.Annotations[AnnotationCPUShare] = shareText
	ct := &pod.Spec.Containers[0]
	ct.Args = append(ct.Args, "--threads", strconv.Itoa(max(1, int(share))))
	ct.Env = append(ct.Env, corev1.EnvVar{Name: EnvCPUShare, Value: shareText})
	// A function's pod is replaced by a new cold start, not restarted in place.
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	return pod
}

// IsFunction reports whether pod is a function pod.
func IsFunction(pod *corev1.Pod) bool {
	return pod != nil && pod.Labels[LabelManagedBy] == ManagedBy && pod.Labels[LabelComponent] == ComponentFunction
}

// Start implements functions.Runtime: it creates the pod and waits until the pod is Ready and
// its worker answers /v2/health/ready.
func (r *podRuntime) Start(ctx context.Context, model string, memoryMB int) (string, string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	pod := r.cfg.Pods.FunctionPod(podName(model, "fn-"+hex.EncodeToString(b[:])), model, memoryMB, r.cfg.Tier, time.Now())
	created, err := r.client.CoreV1().Pods(r.cfg.Pods.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", "", fmt.Errorf("create function pod for %s: %w", model, err)
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.StartTimeout)
	defer cancel()
	addr, err := r.waitReady(wctx, created)
	if err != nil {
		r.delete(created.Name)
		return "", "", fmt.Errorf("function pod %s: %w", created.Name, err)
	}
	r.mu.Lock()
	r.addrs[created.Name] = addr
	r.mu.Unlock()
	return created.Name, addr, nil
}

// waitReady watches pod until it is Ready with an address, then probes its worker.
func (r *podRuntime) waitReady(ctx context.Context, pod *corev1.Pod) (string, error) {
	in := InstanceFromPod(pod, false)
	if in.State != provider.StateReady {
		w, err := r.client.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: pod.ResourceVersion})
		if err != nil {
			return "", fmt.Errorf("watch: %w", err)
		}
		defer w.Stop()
		for in.State != provider.StateReady {
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("not ready: %w", context.Cause(ctx))
			case ev, ok := <-w.ResultChan():
				if !ok {
					return "", errors.New("watch closed before the pod was ready")
				}
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod || p.Name != pod.Name {
					continue
				}
				if ev.Type == watch.Deleted {
					return "", errors.New("pod deleted before it was ready")
				}
				in = InstanceFromPod(p, false)
				if in.State == provider.StateTerminated || in.State == provider.StateDraining {
					return "", fmt.Errorf("pod %s before it was ready", in.State)
				}
			}
		}
	}
	return in.Addr, r.probe(ctx, in.Addr)
}

// probe polls the worker's /v2/health/ready until it answers 200 (the model is loaded).
func (r *podRuntime) probe(ctx context.Context, addr string) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/v2/health/ready", nil)
		if resp, err := r.cfg.Probe.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("worker at %s not ready: %w", addr, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Addr implements functions.Runtime: a function pod keeps its address.
func (r *podRuntime) Addr(_ context.Context, id string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.addrs[id]
	if !ok {
		return "", fmt.Errorf("function pod %s: %w", id, provider.ErrNotFound)
	}
	return a, nil
}

// Stop implements functions.Runtime: the pod is deleted (drained within Pods.StopTimeout).
func (r *podRuntime) Stop(ctx context.Context, id string) error {
	r.mu.Lock()
	delete(r.addrs, id)
	r.mu.Unlock()
	err := r.client.CoreV1().Pods(r.cfg.Pods.Namespace).Delete(ctx, id, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete function pod %s: %w", id, err)
	}
	r.log.Info("function pod deleted", "instance", id)
	return nil
}

func (r *podRuntime) delete(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Stop(ctx, id); err != nil {
		r.log.Warn("function pod", "err", err)
	}
}

// Close implements functions.Runtime: it deletes the pods this runtime made (function pods
// scale to zero; unlike VM pods, none is left for a restarted gateway to adopt).
func (r *podRuntime) Close() error {
	r.mu.Lock()
	ids := make([]string, 0, len(r.addrs))
	for id := range r.addrs {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, r.Stop(ctx, id))
		cancel()
	}
	return errors.Join(errs...)
}
