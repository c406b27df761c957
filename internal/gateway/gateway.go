package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/gateway/fanout"
	"github.com/sloserve/sloserve/internal/gateway/metrics"
	"github.com/sloserve/sloserve/internal/oip"
)

// Options are the gateway's dependencies; a nil field means a safe default.
type Options struct {
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
	// Registerer receives the gateway's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Backend sends batches to instances; nil means NewOIPBackend with default options.
	Backend Backend
	// Dispatch names the internal/dispatch pick that chooses the instance for each batch
	// (each model's batcher owns its own picker); "" means dispatch.DefaultName.
	Dispatch string
	// BackendTimeout bounds one batch's round trip to an instance; 0 means 30 s.
	BackendTimeout time.Duration
	// Version is the server version GET /v2 and ServerMetadata report (the build's module
	// version, which the binary passes down); "" means "(devel)".
	Version string
	// ReadyAfterSync keeps GET /v2/health/ready at "not ready" until a Sync has applied the
	// fleet without an error: a replica that starts before its fleet is known (leader election:
	// a follower does not launch) takes traffic only once it has the fleet view.
	ReadyAfterSync bool
}

// Model is one model the gateway serves (batcher.Model).
type Model = batcher.Model

// Instance is one backend the gateway can send a model's batches to (batcher.Instance).
type Instance = batcher.Instance

// DefaultQueueLimit is batcher.DefaultQueueLimit.
const DefaultQueueLimit = batcher.DefaultQueueLimit

// DefaultMaxBatchBytes is batcher.DefaultMaxBatchBytes.
const DefaultMaxBatchBytes = batcher.DefaultMaxBatchBytes

// ErrTooManyRows means a request carries more rows than its model's MaxRows (400).
var ErrTooManyRows = fmt.Errorf("gateway: request has more rows than the model accepts (max_rows): %w", oip.ErrBadRequest)

// Gateway routes inference requests to per-model batchers. It is safe for concurrent use.
type Gateway struct {
	log     *slog.Logger
	backend Backend
	pick    string
	timeout time.Duration
	version string // Options.Version
	metrics *metrics.Set
	ens     *fanout.Set // live Cocktail ensembles (package fanout, ensembles.go)

	mu       sync.Mutex // serialises AddModel and Close
	batchers atomic.Pointer[map[string]*served]
	closed   atomic.Bool
	unsynced atomic.Bool // Options.ReadyAfterSync and no clean Sync yet
	stats    statsTable  // per-model request counters (stats.go)

	repo    atomic.Pointer[repoTable]  // the model repository's public names and versions (repotable.go)
	repoMgr atomic.Pointer[Repository] // loads and unloads the repository's models; nil: none

	detailLogged, detailSkipped atomic.Int64 // logDetail's rate limit: last log (Unix ns), left out
}

// New returns a Gateway with no models.
func New(opts Options) (*Gateway, error) {
	g := &Gateway{log: opts.Logger, backend: opts.Backend, pick: opts.Dispatch, timeout: opts.BackendTimeout, version: opts.Version}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.unsynced.Store(opts.ReadyAfterSync)
	if g.backend == nil {
		g.backend = NewOIPBackend(oip.ClientOptions{})
	}
	if g.pick == "" {
		g.pick = dispatch.DefaultName
	}
	if _, err := dispatch.New(g.pick); err != nil {
		return nil, err
	}
	if g.timeout <= 0 {
		g.timeout = 30 * time.Second
	}
	m, err := metrics.New(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("register gateway metrics: %w", err)
	}
	g.metrics = m
	g.ens = fanout.NewSet(members{g}, g.log)
	empty := map[string]*served{}
	g.batchers.Store(&empty)
	return g, nil
}

// AddModel starts serving a model: it validates m and starts the model's batcher goroutine.
func (g *Gateway) AddModel(m Model) error {
	if m.Name == "" {
		return fmt.Errorf("add model: name must not be empty")
	}
	if err := m.SLO.Validate(); err != nil {
		return fmt.Errorf("add model %s: %w", m.Name, err)
	}
	if m.Policy == nil {
		return fmt.Errorf("add model %s: policy must not be nil", m.Name)
	}
	if m.Slots < 0 {
		return fmt.Errorf("add model %s: slots must be ≥ 0, got %d", m.Name, m.Slots)
	}
	if m.QueueLimit < 0 {
		return fmt.Errorf("add model %s: queue limit must be ≥ 0, got %d", m.Name, m.QueueLimit)
	}
	if m.QueueLimit == 0 {
		m.QueueLimit = DefaultQueueLimit
	}
	if m.MaxRows < 0 || m.MaxBatchBytes < 0 {
		return fmt.Errorf("add model %s: max rows and max batch bytes must be ≥ 0, got %d and %d", m.Name, m.MaxRows, m.MaxBatchBytes)
	}
	if m.MaxBatchBytes == 0 {
		m.MaxBatchBytes = DefaultMaxBatchBytes
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Load() {
		return ErrShuttingDown
	}
	old := *g.batchers.Load()
	if _, ok := old[m.Name]; ok {
		return fmt.Errorf("add model %s: already served", m.Name)
	}
	picker, err := dispatch.New(g.pick)
	if err != nil {
		return err
	}
	mm := g.metrics.ForModel(m.Name, m.SLO)
	b := &served{Batcher: batcher.New(batcher.Config{Model: m, Picker: picker, Backend: g.backend, Timeout: g.timeout,
		Log: g.log, Observer: mm}), m: mm}
	next := make(map[string]*served, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[m.Name] = b
	g.batchers.Store(&next)
	go b.Run()
	g.log.Info("model added", "model", m.Name, "slo", m.SLO.Threshold, "queue_limit", m.QueueLimit)
	return nil
}

// ModelNames returns the names of the served models, sorted.
func (g *Gateway) ModelNames() []string {
	bs := *g.batchers.Load()
	names := make([]string, 0, len(bs))
	for n := range bs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (g *Gateway) batcher(model string) (*served, error) {
	b, ok := (*g.batchers.Load())[model]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrModelNotFound, model)
	}
	return b, nil
}

// AddInstance makes an instance available to a model's batches. When the model has no input
// schema yet, it is learnt from the instance's model metadata first.
func (g *Gateway) AddInstance(ctx context.Context, model string, in Instance) error {
	b, err := g.batcher(model)
	if err != nil {
		return err
	}
	if in.ID == "" || in.Addr == "" {
		return fmt.Errorf("add instance to %s: id and addr must not be empty", model)
	}
	if in.Slots <= 0 {
		in.Slots = max(b.Slots(), 1)
	}
	if b.Metadata() == nil {
		md, err := g.backend.Metadata(ctx, in.Addr, model)
		if err != nil {
			return fmt.Errorf("add instance %s to %s: %w", in.ID, model, err)
		}
		md.Name = model
		b.LearnMetadata(md)
	}
	if err := b.AddInstance(in); err != nil {
		return err
	}
	g.log.Info("instance added", "model", model, "instance", in.ID, "addr", in.Addr, "slots", in.Slots)
	return nil
}

// RemoveInstance stops sending new batches to an instance and returns once its batches in
// flight have completed (drain), or when ctx is done. Waiting requests stay queued for the
// model's other instances.
func (g *Gateway) RemoveInstance(ctx context.Context, model, id string) error {
	b, err := g.batcher(model)
	if err != nil {
		return err
	}
	drained, err := b.Drain(id)
	if err != nil {
		return err
	}
	select {
	case <-drained:
		g.log.Info("instance removed", "model", model, "instance", id)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain instance %s: %w", id, ctx.Err())
	}
}

// SetWeights sets the dispatch weight of each listed instance of a model, by instance id —
// INFless's α-band rate (requests per second; §3.2) or any relative capacity. Instances not
// listed keep theirs; an instance starts at weight 1 when added (also when Sync re-adds a
// restarted worker). Ids the model does not have (an instance not added yet or already removed:
// weights race with Sync) are ignored. Every weight must be finite and > 0, else nothing is set.
//
// Only the weighted pick uses the weights: with Options.Dispatch
// dispatch.WeightedLeastOutstandingName each batch goes to the eligible instance with the
// smallest (outstanding batches + 1) / weight, so instances with enough slots (Model.Slots,
// Instance.Slots) share the load in proportion to their weights; with one slot each, a busy
// model's batches go to whichever instance is free and the weights only choose among free ones.
// least-outstanding (the default) and round-robin ignore the weights.
func (g *Gateway) SetWeights(model string, w map[string]float64) error {
	b, err := g.batcher(model)
	if err != nil {
		return fmt.Errorf("set weights: %w", err)
	}
	ids := make([]string, 0, len(w))
	for id := range w {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the first bad weight in id order, for a stable error
	for _, id := range ids {
		if v := w[id]; !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("set weights of %s: instance %s: weight must be finite and > 0, got %v", model, id, v)
		}
	}
	own := maps.Clone(w) // the caller may change w once we return
	return b.SetWeights(own)
}

// Instances returns the ids of a model's instances that take new batches.
func (g *Gateway) Instances(model string) ([]string, error) {
	b, err := g.batcher(model)
	if err != nil {
		return nil, err
	}
	insts, ok := b.Instances()
	if !ok {
		return nil, ErrShuttingDown
	}
	var out []string
	for _, in := range insts {
		if !in.Draining {
			out = append(out, in.ID)
		}
	}
	return out, nil
}

// Stats are counters of one model's batcher since it started.
type Stats struct {
	// Batches is the number of batches dispatched; Dispatched the number of requests in them.
	Batches, Dispatched int64
}

// MeanBatchSize returns Dispatched / Batches, or 0 before the first batch.
func (s Stats) MeanBatchSize() float64 {
	if s.Batches == 0 {
		return 0
	}
	return float64(s.Dispatched) / float64(s.Batches)
}

// Stats returns a model's batching counters.
func (g *Gateway) Stats(model string) (Stats, error) {
	b, err := g.batcher(model)
	if err != nil {
		return Stats{}, err
	}
	return Stats{Batches: b.Batches(), Dispatched: b.Dispatched()}, nil
}

// Close fails every waiting request with ErrShuttingDown, waits until batches in flight have
// completed (or ctx is done, which cancels them) and stops the batchers. It returns the number
// of waiting requests that were failed.
func (g *Gateway) Close(ctx context.Context) (int, error) {
	g.mu.Lock()
	g.closed.Store(true)
	bs := *g.batchers.Load()
	g.mu.Unlock()
	failed := 0
	for _, b := range bs {
		failed += b.Stop(ctx)
	}
	g.log.Info("gateway closed", "failed_pending", failed)
	return failed, ctx.Err()
}
