package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/keepalive"
)

// Runtime starts and stops the instances of a function tier: worker processes or pods.
type Runtime interface {
	// Start launches an instance of model with memoryMB (its CPU share follows the memory,
	// cost.Serverless.CPUShare) and returns once it answers: the cold start. It returns the
	// instance's id and OIP address.
	Start(ctx context.Context, model string, memoryMB int) (id, addr string, err error)
	// Addr returns the instance's current address, waiting until ctx ends while it is not ready
	// (a process the supervisor restarted listens on a new port).
	Addr(ctx context.Context, id string) (string, error)
	// Stop releases the instance.
	Stop(ctx context.Context, id string) error
	// Enforcement says how the CPU share is enforced (e.g. cgroup v2 cpu.max, pod limits).
	Enforcement() string
	// Close stops every instance.
	Close() error
}

// Config configures a function tier.
type Config struct {
	// Tier is the catalog's serverless tier: prices, granularity, the full-vCPU memory.
	Tier cost.Serverless
	// MaxInstances bounds the instances of one pool (Lambda's concurrency limit); default
	// DefaultInstances.
	MaxInstances int
	// KeepAlive returns the keep-alive policy of a new pool (nil: keepalive.Fixed of Tier's
	// KeepAlive). It is called once per (model, memory) and owned by the tier.
	KeepAlive func() keepalive.Policy
	// ReapEvery is how often idle instances are checked against the keep-alive; default 250 ms.
	ReapEvery time.Duration
	// RunGap is the shortest pause that ends a run of invocations: the keep-alive policy sees
	// each run as one invocation (as the sloserve policy's LSTH sees runs of samples with
	// arrivals), and learns the pauses between runs; default 1 s (the app sets the
	// controller's unit, LSTH's bin).
	RunGap time.Duration
}

// DefaultInstances is Config.MaxInstances' default.
const DefaultInstances = 4

// Stats are one model's function-tier figures since the tier started.
type Stats struct {
	// Invocations counts the calls; ColdStarts those that started an instance.
	Invocations, ColdStarts int64
	// AfterColdStart counts the calls that waited for their instance's cold start and then
	// ran without error on it: batches buffered through a cold start and released to the new
	// instance (the activator's work).
	AfterColdStart int64
	// ColdStartSeconds is the summed cold start time (launch to ready: model loaded).
	ColdStartSeconds float64
	// BilledGBSeconds is memory × billed duration; CostUSD what the calls cost (GB-s + requests).
	BilledGBSeconds, CostUSD float64
	// InstanceSeconds is the time instances were alive (idle included: what LSTH's keep-alive
	// costs the machine, not billed).
	InstanceSeconds float64
	// Live is the number of instances now; MemoryMB the last pool's memory.
	Live, MemoryMB int
}

// Invocation is what one call cost.
type Invocation struct {
	// Instance is the instance that ran it; Cold reports a cold start and ColdStart its time.
	Instance  string
	Cold      bool
	ColdStart time.Duration
	// Duration is the call's execution time (the batch's round trip on a warm instance);
	// Billed is it rounded up to the granularity; CostUSD the call's price.
	Duration, Billed time.Duration
	CostUSD          float64
}

// Bill is an invocation of memoryMB that ran for d, priced as tier bills it (BATCH Eq. 1):
// d rounded up to the granularity (1 ms) × memory × the GB-second price, plus the per-request
// price.
func Bill(tier cost.Serverless, memoryMB int, d time.Duration) Invocation {
	return Invocation{Duration: d, Billed: cost.Billing{Granularity: tier.Granularity}.Billable(d), CostUSD: tier.InvocationCost(memoryMB, d)}
}

// Tier is a function tier over a Runtime. It is safe for concurrent use.
type Tier struct {
	cfg Config
	rt  Runtime
	log *slog.Logger

	mu     sync.Mutex
	pools  map[poolKey]*pool
	stats  map[string]*Stats
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

type poolKey struct {
	model    string
	memoryMB int
}

// pool is one (model, memory)'s instances.
type pool struct {
	ka       keepalive.Policy
	idle     []*inst // warm and idle, most recently used last
	live     int     // instances starting, busy or idle
	freed    chan struct{}
	lastEnd  time.Time // when the last invocation ended
	runStart time.Time // the current run of invocations (keep-alive's invocation); zero: none open
	busy     int
}

type inst struct {
	id       string
	born     time.Time
	idleAt   time.Time
	coldTime time.Duration
}

// New returns a function tier over rt; log may be nil. Close stops its instances and rt.
func New(cfg Config, rt Runtime, log *slog.Logger) (*Tier, error) {
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = DefaultInstances
	}
	if cfg.ReapEvery <= 0 {
		cfg.ReapEvery = 250 * time.Millisecond
	}
	if cfg.RunGap <= 0 {
		cfg.RunGap = time.Second
	}
	if cfg.Tier.PricePerGBSecond <= 0 {
		return nil, fmt.Errorf("function tier: serverless price_per_gb_second must be > 0, got %v", cfg.Tier.PricePerGBSecond)
	}
	if rt == nil {
		return nil, errors.New("function tier: nil runtime")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Tier{cfg: cfg, rt: rt, log: log, pools: map[poolKey]*pool{}, stats: map[string]*Stats{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go f.reap()
	return f, nil
}

// Enforcement says how the runtime enforces the CPU share.
func (f *Tier) Enforcement() string { return f.rt.Enforcement() }

// MaxInstances is the most instances of one pool.
func (f *Tier) MaxInstances() int { return f.cfg.MaxInstances }

// Stats returns a model's figures.
func (f *Tier) Stats(model string) Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.stats[model]; ok {
		return *s
	}
	return Stats{}
}

// Invoke runs call on an instance of model with memoryMB: a warm idle one, or a new one (cold
// start) when none is idle and the pool has room, else it waits for one to free until ctx ends.
// call's duration is billed whatever it returns.
func (f *Tier) Invoke(ctx context.Context, model string, memoryMB int, call func(ctx context.Context, addr string) error) (Invocation, error) {
	memoryMB = f.cfg.Tier.ClampMemory(memoryMB)
	in, cold, err := f.acquire(ctx, model, memoryMB)
	if err != nil {
		return Invocation{}, err
	}
	addr, err := f.rt.Addr(ctx, in.id)
	if err != nil {
		f.release(model, memoryMB, in, Invocation{Instance: in.id}, time.Now(), false)
		return Invocation{}, fmt.Errorf("function tier %s: instance %s: %w", model, in.id, err)
	}
	start := time.Now()
	cerr := call(ctx, addr)
	end := time.Now()
	inv := Bill(f.cfg.Tier, memoryMB, end.Sub(start))
	inv.Instance, inv.Cold = in.id, cold
	if cold {
		inv.ColdStart = in.coldTime
	}
	f.release(model, memoryMB, in, inv, end, cold && cerr == nil)
	return inv, cerr
}

// Prewarm starts one instance of model with memoryMB and leaves it idle (a cold start ahead
// of the traffic, as LSTH's pre-warm or Lambda's provisioned concurrency); it is released by
// the keep-alive like any idle instance.
func (f *Tier) Prewarm(ctx context.Context, model string, memoryMB int) error {
	memoryMB = f.cfg.Tier.ClampMemory(memoryMB)
	in, _, err := f.acquire(ctx, model, memoryMB)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pools[poolKey{model, memoryMB}]
	in.idleAt = time.Now()
	p.idle = append(p.idle, in)
	p.busy--
	p.runStart = time.Time{} // a pre-warm is no invocation
	f.signal(p)
	return nil
}
