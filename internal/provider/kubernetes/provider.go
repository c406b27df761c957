package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/provider"
)

// ErrNotStarted is returned by Launch, Terminate and Instances before Start has synced the caches.
var ErrNotStarted = errors.New("kubernetes provider not started")

// ErrUnknownType is returned by Launch for an instance type missing from Config.Types.
var ErrUnknownType = errors.New("unknown instance type")

var _ provider.Provider = (*Provider)(nil)

// Provider runs instances as Pods in one namespace. Launch creates a pod, Terminate deletes it
// (the kubelet sends SIGTERM and waits Config.StopTimeout), and Instances reads an informer
// cache, so it is cheap to poll. With Config.WatchNodes it also watches nodes and handles spot
// interruptions (see Step). It is safe for concurrent use once Start has returned.
type Provider struct {
	client clientset.Interface
	cfg    Config
	log    *slog.Logger
	now    func() time.Time

	podFactory  informers.SharedInformerFactory
	nodeFactory informers.SharedInformerFactory
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	synced      []cache.InformerSynced

	nudge chan struct{}
	// manual leaves Step to the caller (tests); the loop then only waits.
	manual bool
	// active, when set, gates the loop's interruption handling (SetActive).
	active atomic.Pointer[func() bool]

	// stepMu serialises Step; noticed remembers the pods Step has already noticed (by UID, with
	// their replacement) until the informer cache shows the annotation, so a quick second Step
	// does not launch a second replacement.
	stepMu  sync.Mutex
	noticed map[string]bool // key: UID/name

	// expectMu guards expected: the pods this provider created that its informer cache has not
	// shown yet, by name (ReplicaSet's "expectations"). Instances lists them as launching, so a
	// controller step right after a launch, before the watch event arrives, does not see a fleet
	// one short and launch again (measured: 4 pods for a fleet of 3 under -race on a loaded
	// machine). An entry leaves when the cache shows the pod, when Terminate deletes it, or after
	// expectTTL (a pod deleted by someone else before the cache ever saw it).
	expectMu sync.Mutex
	expected map[string]expectedPod

	mu      sync.Mutex
	started bool
	stop    context.CancelFunc
	done    chan struct{}
}

// New returns a provider over client with cfg (validated). log may be nil (discard).
func New(client clientset.Interface, cfg Config, log *slog.Logger) (*Provider, error) {
	if client == nil {
		return nil, errors.New("kubernetes provider: nil client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kubernetes provider: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Provider{client: client, cfg: cfg, log: log, now: time.Now, nudge: make(chan struct{}, 1), noticed: map[string]bool{}}
	p.podFactory = informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = Selector() }))
	podInf := p.podFactory.Core().V1().Pods()
	p.pods = podInf.Lister()
	p.synced = append(p.synced, podInf.Informer().HasSynced)
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.poke() },
		UpdateFunc: func(any, any) { p.poke() },
		DeleteFunc: func(any) { p.poke() },
	}
	if _, err := podInf.Informer().AddEventHandler(poke); err != nil {
		return nil, fmt.Errorf("kubernetes provider: pod handler: %w", err)
	}
	if cfg.WatchNodes {
		p.nodeFactory = informers.NewSharedInformerFactory(client, 0)
		nodeInf := p.nodeFactory.Core().V1().Nodes()
		p.nodes = nodeInf.Lister()
		p.synced = append(p.synced, nodeInf.Informer().HasSynced)
		if _, err := nodeInf.Informer().AddEventHandler(poke); err != nil {
			return nil, fmt.Errorf("kubernetes provider: node handler: %w", err)
		}
	}
	return p, nil
}

// expectTTL bounds how long a created pod the informer cache has not shown counts as launching:
// ReplicaSet's expectations time out after 5 minutes; a watch that lags a minute is broken, and
// one more launch then is the lesser harm than a fleet held one short.
const expectTTL = time.Minute

type expectedPod struct {
	pod *corev1.Pod
	at  time.Time
}

// expect records pod, just created.
func (p *Provider) expect(pod *corev1.Pod) {
	p.expectMu.Lock()
	defer p.expectMu.Unlock()
	if p.expected == nil {
		p.expected = map[string]expectedPod{}
	}
	p.expected[pod.Name] = expectedPod{pod: pod, at: p.now()}
}

// forget drops the expectation of pod name (deleted).
func (p *Provider) forget(name string) {
	p.expectMu.Lock()
	delete(p.expected, name)
	p.expectMu.Unlock()
}

// unseen returns the expected pods absent from cached (by name), dropping those the cache now
// shows and those older than expectTTL.
func (p *Provider) unseen(cached []*corev1.Pod) []*corev1.Pod {
	p.expectMu.Lock()
	defer p.expectMu.Unlock()
	if len(p.expected) == 0 {
		return nil
	}
	for _, pod := range cached {
		delete(p.expected, pod.Name)
	}
	var out []*corev1.Pod
	now := p.now()
	for name, e := range p.expected {
		if now.Sub(e.at) > expectTTL {
			delete(p.expected, name)
			continue
		}
		out = append(out, e.pod)
	}
	return out
}

func (p *Provider) poke() {
	select {
	case p.nudge <- struct{}{}:
	default:
	}
}

// Start starts the informers, waits until their caches are synced (or ctx is done), and runs
// the interruption loop in the background until Close. ctx bounds only the wait.
func (p *Provider) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return errors.New("kubernetes provider: already started")
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.podFactory.Start(runCtx.Done())
	if p.nodeFactory != nil {
		p.nodeFactory.Start(runCtx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		cancel()
		p.podFactory.Shutdown()
		if p.nodeFactory != nil {
			p.nodeFactory.Shutdown()
		}
		return fmt.Errorf("kubernetes provider: caches not synced: %w", context.Cause(ctx))
	}
	p.started, p.stop, p.done = true, cancel, make(chan struct{})
	go p.run(runCtx)
	p.log.Info("kubernetes provider started", "namespace", p.cfg.Namespace, "watch_nodes", p.cfg.WatchNodes)
	return nil
}

// Close stops the loop and the informers. It does not delete any pod.
func (p *Provider) Close() error {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	<-done
	p.podFactory.Shutdown()
	if p.nodeFactory != nil {
		p.nodeFactory.Shutdown()
	}
	return nil
}

func (p *Provider) run(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Resync)
	defer t.Stop()
	for {
		if p.cfg.WatchNodes && !p.manual && p.isActive() {
			if err := p.Step(ctx, p.now()); err != nil && ctx.Err() == nil {
				p.log.Warn("interruption handling failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.nudge:
		case <-t.C:
		}
	}
}

// SetActive makes the loop handle interruptions (annotate, replace, delete) only while active
// returns true: of several gateway replicas sharing a fleet, the leader alone (leader.Elector's
// IsLeader), so that an interrupted pod is replaced once, not once per replica. Safe to call
// from any goroutine; nil means always.
func (p *Provider) SetActive(active func() bool) {
	if active == nil {
		p.active.Store(nil)
		return
	}
	p.active.Store(&active)
}

func (p *Provider) isActive() bool {
	f := p.active.Load()
	return f == nil || (*f)()
}

func (p *Provider) ready() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		return ErrNotStarted
	}
	return nil
}

// Launch creates the instance's pod and returns it in StateLaunching; the id is the pod name.
func (p *Provider) Launch(ctx context.Context, spec provider.Spec) (provider.Instance, error) {
	if err := p.ready(); err != nil {
		return provider.Instance{}, err
	}
	pod, err := p.create(ctx, spec, nil)
	if err != nil {
		return provider.Instance{}, err
	}
	return InstanceFromPod(pod, false), nil
}

func (p *Provider) create(ctx context.Context, spec provider.Spec, extra map[string]string) (*corev1.Pod, error) {
	if spec.Model == "" {
		return nil, errors.New("launch: spec.Model must not be empty")
	}
	if spec.MaxBatch < 0 || spec.MaxWait < 0 {
		return nil, fmt.Errorf("launch %s: max batch %d and max wait %v must be ≥ 0", spec.Model, spec.MaxBatch, spec.MaxWait)
	}
	base, _ := cost.ParseType(spec.Type)
	res, ok := p.cfg.Types[base]
	if !ok {
		return nil, fmt.Errorf("launch %s: %w %q", spec.Model, ErrUnknownType, spec.Type)
	}
	avoid, err := p.interruptedNodes()
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	pod := p.cfg.buildPod(podName(spec.Model, hex.EncodeToString(b[:])), spec, res, p.now(), slices.Collect(maps.Keys(avoid)), extra)
	out, err := p.client.CoreV1().Pods(p.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("launch %s on %s: %w", spec.Model, spec.Type, err)
	}
	p.expect(out)
	p.log.Info("instance launched", "instance", out.Name, "model", spec.Model, "type", spec.Type)
	return out, nil
}

// Terminate deletes the instance's pod; the kubelet drains it (SIGTERM, then SIGKILL after
// Config.StopTimeout). It returns provider.ErrNotFound for an unknown or foreign pod.
func (p *Provider) Terminate(ctx context.Context, id string) error {
	if err := p.ready(); err != nil {
		return err
	}
	if pod, err := p.pods.Pods(p.cfg.Namespace).Get(id); err == nil && !IsManaged(pod) {
		return fmt.Errorf("terminate %s: %w", id, provider.ErrNotFound)
	}
	err := p.client.CoreV1().Pods(p.cfg.Namespace).Delete(ctx, id, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		p.forget(id)
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("terminate %s: %w", id, provider.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("terminate %s: %w", id, err)
	}
	p.log.Info("instance terminated", "instance", id)
	return nil
}

// Instances lists the managed pods from the informer cache, sorted by id. Pods on a node marked
// for interruption are StateInterrupted even before Step annotates them.
func (p *Provider) Instances(ctx context.Context) ([]provider.Instance, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	pods, err := p.pods.Pods(p.cfg.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	bad, err := p.interruptedNodes()
	if err != nil {
		return nil, err
	}
	out := make([]provider.Instance, 0, len(pods))
	for _, pod := range append(pods, p.unseen(pods)...) {
		if !IsManaged(pod) {
			continue
		}
		out = append(out, InstanceFromPod(pod, bad[pod.Spec.NodeName]))
	}
	slices.SortFunc(out, func(a, b provider.Instance) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// NodeInterrupted reports whether n is marked for termination by one of the configured taints
// or conditions.
func (c *Config) NodeInterrupted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if slices.Contains(c.InterruptionTaints, t.Key) {
			return true
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Status == corev1.ConditionTrue && slices.Contains(c.InterruptionConditions, cond.Type) {
			return true
		}
	}
	return false
}

func (p *Provider) interruptedNodes() (map[string]bool, error) {
	if p.nodes == nil {
		return nil, nil
	}
	nodes, err := p.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	bad := map[string]bool{}
	for _, n := range nodes {
		if p.cfg.NodeInterrupted(n) {
			bad[n.Name] = true
		}
	}
	return bad, nil
}

// Step runs one round of interruption handling at now; Start's loop calls it on every pod or
// node event and every Config.Resync. For each managed pod on a node marked for termination it
// is the live counterpart of the simulator's spot notice (sim: spotNotice): the pod is annotated
// AnnotationInterrupted, so Instances and the discovery watcher report it as
// provider.StateInterrupted and the gateway drains it; with Config.ReplaceInterrupted a pod with
// the same Spec is launched away from interrupted nodes. An interrupted pod is deleted once its
// replacement is Ready or Config.InterruptionGrace has passed (the cloud's reclaim).
func (p *Provider) Step(ctx context.Context, now time.Time) error {
	p.stepMu.Lock()
	defer p.stepMu.Unlock()
	bad, err := p.interruptedNodes()
	if err != nil {
		return err
	}
	pods, err := p.pods.Pods(p.cfg.Namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	byName := make(map[string]*corev1.Pod, len(pods))
	live := make(map[string]bool, len(pods))
	for _, pod := range pods {
		byName[pod.Name] = pod
		live[noticeKey(pod)] = true
	}
	for k := range p.noticed {
		if !live[k] {
			delete(p.noticed, k)
		}
	}
	var errs []error
	for _, pod := range pods {
		if !IsManaged(pod) || pod.DeletionTimestamp != nil {
			continue
		}
		at, noticed := pod.Annotations[AnnotationInterrupted]
		if !noticed {
			if !bad[pod.Spec.NodeName] || p.noticed[noticeKey(pod)] {
				continue
			}
			if err := p.notice(ctx, pod, now); err != nil {
				errs = append(errs, err)
				continue
			}
			p.noticed[noticeKey(pod)] = true
			continue
		}
		since, perr := time.Parse(time.RFC3339Nano, at)
		expired := perr != nil || now.Sub(since) >= p.cfg.InterruptionGrace
		replaced := false
		if r, ok := byName[pod.Annotations[AnnotationReplacement]]; ok {
			replaced = InstanceFromPod(r, bad[r.Spec.NodeName]).State == provider.StateReady
		}
		if replaced || expired {
			err := p.client.CoreV1().Pods(p.cfg.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete interrupted %s: %w", pod.Name, err))
				continue
			}
			p.log.Info("interrupted instance removed", "instance", pod.Name, "replaced", replaced, "expired", expired)
		}
	}
	return errors.Join(errs...)
}

func noticeKey(pod *corev1.Pod) string { return string(pod.UID) + "/" + pod.Name }

// notice marks pod interrupted and launches its replacement.
func (p *Provider) notice(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	ann := map[string]string{AnnotationInterrupted: now.UTC().Format(time.RFC3339Nano)}
	if p.cfg.ReplaceInterrupted {
		r, err := p.create(ctx, SpecFromPod(pod), map[string]string{AnnotationReplaces: pod.Name})
		if err != nil {
			return fmt.Errorf("replace interrupted %s: %w", pod.Name, err)
		}
		ann[AnnotationReplacement] = r.Name
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	_, err := p.client.CoreV1().Pods(p.cfg.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("annotate interrupted %s: %w", pod.Name, err)
	}
	p.log.Info("instance interrupted", "instance", pod.Name, "node", pod.Spec.NodeName, "replacement", ann[AnnotationReplacement])
	return nil
}
