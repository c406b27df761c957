package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
)

// Kind is what happened to an instance's endpoint.
type Kind int

// The event kinds. For one instance they come in the order Add (Drain Add)* Drain Remove:
// a Remove is always preceded by a Drain, so a consumer that stops routing on Drain and forgets
// on Remove never has requests routed to a vanished pod. Pods that never became ready produce
// no events.
const (
	// Add: the instance is ready and addressed; route new requests to it.
	Add Kind = iota + 1
	// Drain: the instance stops taking new requests (deletion started, spot interruption
	// notice, readiness lost); let batches in flight complete.
	Drain
	// Remove: the pod is gone; forget the instance.
	Remove
)

// String returns "add", "drain" or "remove".
func (k Kind) String() string {
	switch k {
	case Add:
		return "add"
	case Drain:
		return "drain"
	case Remove:
		return "remove"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Event is one change of an instance's endpoint. Instance is the instance as last seen (for
// Remove, its last known state).
type Event struct {
	Kind     Kind
	Instance provider.Instance
}

// Watcher delivers endpoint events until ctx is done. emit is called from a single goroutine,
// one event at a time; it should not block for long (hand drains to another goroutine).
type Watcher interface {
	Run(ctx context.Context, emit func(Event)) error
}

var _ Watcher = (*PodWatcher)(nil)

// PodWatcher is a Watcher over an informer on the provider's pods in one namespace (it needs
// list and watch on pods there, nothing else).
type PodWatcher struct {
	client    clientset.Interface
	namespace string
	log       *slog.Logger

	mu    sync.Mutex
	added map[string]provider.Instance // routed instances by id
	known map[string]bool              // ids ever added and not yet removed
}

// NewPodWatcher returns a watcher of the managed pods in namespace. log may be nil.
func NewPodWatcher(client clientset.Interface, namespace string, log *slog.Logger) *PodWatcher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PodWatcher{client: client, namespace: namespace, log: log, added: map[string]provider.Instance{}, known: map[string]bool{}}
}

// Ready returns the instances currently added (routed), sorted by id — the set a consumer that
// prefers snapshots (gateway.Sync) can apply after every event.
func (w *PodWatcher) Ready() []provider.Instance {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]provider.Instance, 0, len(w.added))
	for _, in := range w.added {
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b provider.Instance) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Run starts the informer, emits an Add for every ready pod already there, then follows changes
// until ctx is done; it returns ctx's cause, or an error if the cache cannot sync.
func (w *PodWatcher) Run(ctx context.Context, emit func(Event)) error {
	if emit == nil {
		return errors.New("discovery: nil emit")
	}
	factory := informers.NewSharedInformerFactoryWithOptions(w.client, 0,
		informers.WithNamespace(w.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = kubernetes.Selector() }))
	inf := factory.Core().V1().Pods().Informer()
	// Informer handlers of one registration run serially on one goroutine, so emit is too.
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj, false, emit) },
		UpdateFunc: func(_, obj any) { w.observe(obj, false, emit) },
		DeleteFunc: func(obj any) { w.observe(obj, true, emit) },
	})
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return fmt.Errorf("discovery: pod cache not synced: %w", context.Cause(ctx))
	}
	w.log.Info("endpoint discovery started", "namespace", w.namespace)
	<-ctx.Done()
	return context.Cause(ctx)
}

// observe turns one pod notification into at most two events.
func (w *PodWatcher) observe(obj any, deleted bool, emit func(Event)) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || !kubernetes.IsManaged(pod) {
		return
	}
	in := kubernetes.InstanceFromPod(pod, false)
	routable := !deleted && in.State == provider.StateReady
	w.mu.Lock()
	prev, had := w.added[in.ID]
	var evs []Event
	switch {
	case routable && (!had || prev.Addr != in.Addr):
		if had { // address changed: drain the old endpoint first
			evs = append(evs, Event{Drain, prev})
		}
		w.added[in.ID] = in
		w.known[in.ID] = true
		evs = append(evs, Event{Add, in})
	case routable:
		w.added[in.ID] = in
	case had:
		delete(w.added, in.ID)
		evs = append(evs, Event{Drain, in})
	}
	if deleted && w.known[in.ID] {
		delete(w.known, in.ID)
		in.State = provider.StateTerminated
		evs = append(evs, Event{Remove, in})
	}
	w.mu.Unlock()
	for _, ev := range evs {
		w.log.Debug("endpoint event", "kind", ev.Kind.String(), "instance", ev.Instance.ID, "addr", ev.Instance.Addr)
		emit(ev)
	}
}
