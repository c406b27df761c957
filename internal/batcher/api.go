package batcher

import (
	"iter"
	"log/slog"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// Model is one model a Batcher serves.
type Model struct {
	// Name is the model name in OIP paths (/v2/models/{name}/infer).
	Name string
	// SLO gives each request its deadline: arrival + SLO.Threshold.
	SLO slo.Spec
	// Policy decides when the model's queue dispatches; the batcher owns it from now on.
	Policy batching.Policy
	// QueueLimit is the largest number of requests waiting for dispatch; beyond it requests are
	// refused with 429. 0 means DefaultQueueLimit.
	QueueLimit int
	// Slots is the number of batches each instance of the model takes at once when the instance
	// does not say (Instance.Slots); 0 means 1.
	Slots int
	// MaxRows is the most rows one request may carry; more is refused with 400. 0 means no bound
	// beyond the body size limits.
	MaxRows int64
	// MaxBatchBytes is the most tensor data, in bytes, one batch sends to an instance: a batch
	// closes before a request that would take it past this (a larger request goes alone). 0
	// means DefaultMaxBatchBytes; it should stay below the workers' body limit.
	MaxBatchBytes int64
	// Metadata is the model's OIP metadata, against which the handler validates requests before
	// they are queued; nil means learn it from the first instance added. Until it is known,
	// requests are answered 503.
	Metadata *oip.ModelMetadata
}

// DefaultQueueLimit is the default bound, in requests, of a model's queue.
const DefaultQueueLimit = 1024

// DefaultMaxBatchBytes bounds a batch's tensor data at 16 MiB, a quarter of the workers' default
// 64 MiB body limit (oip.DefaultLimits), so that merged batches never exceed it.
const DefaultMaxBatchBytes = 16 << 20

// Instance is one backend the gateway can send a model's batches to.
type Instance struct {
	// ID identifies the instance (the provider's instance id).
	ID string
	// Addr is the base URL of the instance's OIP v2 endpoint, e.g. "http://127.0.0.1:9001".
	Addr string
	// Slots is the number of batches the instance takes at once; 0 means 1.
	Slots int
	// MaxBatch is the instance's own largest batch (INFless non-uniform batching, MArk's
	// per-type N_batch): the batcher never sends it more requests at once; 0 means no bound
	// beyond the model's policy.
	MaxBatch int
	// MaxWait, when > 0, makes the instance batch on its own (INFless's built-in batch queue per
	// instance): it takes a batch of up to MaxBatch (at least 1) from the model's queue as soon as
	// the queue holds that many or the oldest request has waited MaxWait (INFless: t_slo − t_exec),
	// and the model's batching policy sends it nothing. 0: the model's policy decides its batches.
	MaxWait time.Duration
}

// Config is what a Batcher needs besides its model: the caller's backend, timeout, logger and
// observer, and the model's own dispatch picker.
type Config struct {
	// Model is the model served; its QueueLimit and MaxBatchBytes must already be defaulted.
	Model Model
	// Picker chooses the instance of each batch (one picker per model: pickers keep state).
	Picker dispatch.Picker
	// Backend sends the batches.
	Backend Backend
	// Timeout bounds one batch's round trip to an instance.
	Timeout time.Duration
	// Log receives the batcher's warnings.
	Log *slog.Logger
	// Observer receives the batcher's measurements.
	Observer Observer
}

// Observer receives a batcher's measurements: the gateway's per-model metrics and Triton
// statistics implement it. The batcher goroutine calls every method but Answered, which the
// goroutine that completes a batch calls too; implementations must be cheap and must not block.
type Observer interface {
	// QueueLength reports the number of requests waiting after each step.
	QueueLength(n int)
	// BatchSize reports the number of requests in a batch at dispatch.
	BatchSize(n int)
	// InstanceCounts reports the counts of ready and draining instances after every change.
	InstanceCounts(ready, draining int)
	// Answered reports one request of a batch that was answered (not sent back to the queue):
	// its wait in the queue and the batch's round trip.
	Answered(wait, rtt time.Duration)
	// Executed reports a successful batch of rows rows and its round trip, and the queue
	// waits of its requests.
	Executed(rows int64, rtt time.Duration, waits iter.Seq[time.Duration])
}

// BounceObserver is an Observer that also counts the batches an instance refused as busy (its
// 429: the worker's --max-in-flight, shared with other gateway replicas; busy.go) and the
// back-off the batcher gave that instance. Optional: the batcher calls it, on its goroutine, when
// its Observer implements it.
type BounceObserver interface {
	Observer
	Bounced(backoff time.Duration)
}

// observeFlight reports the queue wait and the backend round trip of each request of a batch
// that was answered (not one sent back to the queue for a retry).
func (b *Batcher) observeFlight(f *flight) {
	if f.retry || f.busy || f.completed.IsZero() {
		return
	}
	rt := f.completed.Sub(f.dispatched)
	for _, c := range f.calls {
		b.obs.Answered(f.dispatched.Sub(c.arrival), rt)
	}
}

// Name is the model's name.
func (b *Batcher) Name() string { return b.name }

// SLO is the model's SLO.
func (b *Batcher) SLO() slo.Spec { return b.spec }

// Slots is the model's default slots per instance (Model.Slots).
func (b *Batcher) Slots() int { return b.slots }

// MaxRows is the most rows one request may carry (Model.MaxRows); 0: no bound.
func (b *Batcher) MaxRows() int64 { return b.maxRows }

// Metadata is the model's metadata; nil until known.
func (b *Batcher) Metadata() *oip.ModelMetadata { return b.md.Load() }

// LearnMetadata sets the model's metadata unless it is known already.
func (b *Batcher) LearnMetadata(md *oip.ModelMetadata) { b.md.CompareAndSwap(nil, md) }

// Cost is the current estimate of a batch's round trip (admission's BatchCost).
func (b *Batcher) Cost() BatchCost { return b.est.cost() }

// SeedCost replaces the batch cost estimate that arriving requests read until the next batch
// completes (a warm start, or a test's stale estimate).
func (b *Batcher) SeedCost(c BatchCost) {
	b.est.fixed.Store(int64(c.Fixed))
	b.est.perRow.Store(math.Float64bits(c.PerRowNS))
}

// Batches is the number of batches dispatched since the batcher started.
func (b *Batcher) Batches() int64 { return b.batches.Load() }

// Dispatched is the number of requests in those batches.
func (b *Batcher) Dispatched() int64 { return b.dispatched.Load() }

// Queued is the number of requests waiting now.
func (b *Batcher) Queued() int64 { return b.queued.Load() }

// Hold counts a user of the batcher (a request of a repository model about to Submit); Release
// ends it. Users is the count, which a caller retiring the batcher waits to reach 0.
func (b *Batcher) Hold() { b.users.Add(1) }

// Release ends a Hold.
func (b *Batcher) Release() { b.users.Add(-1) }

// Users is the number of Holds not yet released.
func (b *Batcher) Users() int64 { return b.users.Load() }

// InstanceState is an instance as the batcher sees it at one moment.
type InstanceState struct {
	Instance
	// Draining is set once the instance was removed: it takes no new batch.
	Draining bool
	// Usable reports whether it may take a batch now (not draining, not benched after a fault).
	Usable bool
	// Weight is its dispatch weight (SetWeights; 1 until set).
	Weight float64
	// Outstanding is its number of batches in flight.
	Outstanding int
}

// Instances returns the model's instances, draining ones included; false when the batcher has
// stopped.
func (b *Batcher) Instances() ([]InstanceState, bool) {
	out := make(chan []InstanceState, 1)
	if !b.Control(func(now time.Time) {
		l := make([]InstanceState, 0, len(b.insts))
		for _, in := range b.insts {
			l = append(l, InstanceState{Instance: in.Instance, Draining: in.draining, Usable: in.usable(now),
				Weight: in.weight, Outstanding: in.outstanding})
		}
		out <- l
	}) {
		return nil, false
	}
	return <-out, true
}

// AddInstance makes in available to the model's batches; in.Slots must be set.
func (b *Batcher) AddInstance(in Instance) error {
	errc := make(chan error, 1)
	if !b.Control(func(time.Time) { errc <- b.addInstance(in) }) {
		return ErrShuttingDown
	}
	return <-errc
}

// Drain stops sending new batches to instance id and returns a channel closed once its batches
// in flight have completed.
func (b *Batcher) Drain(id string) (<-chan struct{}, error) {
	type res struct {
		drained chan struct{}
		err     error
	}
	out := make(chan res, 1)
	if !b.Control(func(time.Time) {
		d, err := b.drainInstance(id)
		out <- res{d, err}
	}) {
		return nil, ErrShuttingDown
	}
	r := <-out
	return r.drained, r.err
}

// SetWeights sets the dispatch weight of each listed instance the batcher has; the caller has
// validated w and must not change it afterwards.
func (b *Batcher) SetWeights(w map[string]float64) error {
	if !b.Control(func(time.Time) { b.setWeights(w) }) {
		return ErrShuttingDown
	}
	return nil
}
