package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/provider"
)

// The function tier (provider.TierServerless) on this machine: per (model, memory size) a pool
// of scale-to-zero worker processes, each serving one invocation (one batch) at a time as a
// Lambda instance does. A call finds a warm idle instance or cold-starts one (a real worker
// process: start + model load, measured); an idle instance is released once the keep-alive
// policy (INFless's LSTH, keepalive.LSTH, in the live stack) says it is past its windows. Each
// invocation is billed as Lambda bills it (BATCH Eq. 1): memory × duration rounded up to the
// catalog's granularity (1 ms) × the GB-second price, plus the per-request price. The CPU share
// follows memory (one vCPU at cost.Serverless.FullVCPUMemoryMB, 1769 MB): with cgroup v2's
// cpu.max where this process may create cgroups, else by the worker's thread count (⌊share⌋,
// at least 1) and, below one vCPU, the worker's duty-cycle throttle (--cpu-share).

// FunctionConfig configures a function tier.
type FunctionConfig struct {
	// Worker is the local provider configuration its worker processes start with (binary,
	// args, env, start timeout); its Servers are ignored.
	Worker Config
	// Tier is the catalog's serverless tier: prices, granularity, the full-vCPU memory.
	Tier cost.Serverless
	// MaxInstances bounds the instances of one pool (Lambda's concurrency limit); default 4.
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
	// CgroupRoot is the cgroup v2 mount where per-instance cpu.max groups are made; "" means
	// /sys/fs/cgroup. The tier uses it only when it is a writable cgroup v2 hierarchy with the
	// cpu controller (FunctionTier.Enforcement says which).
	CgroupRoot string
}

// DefaultFunctionInstances is FunctionConfig.MaxInstances' default.
const DefaultFunctionInstances = 4

// CPU enforcements of FunctionTier.Enforcement.
const (
	EnforceCgroup  = "cgroup-v2 cpu.max"
	EnforceThreads = "threads+duty-cycle"
)

// FunctionStats are one model's function-tier figures since the tier started.
type FunctionStats struct {
	// Invocations counts the calls; ColdStarts those that started an instance.
	Invocations, ColdStarts int64
	// ColdStartSeconds is the summed cold start time (process start to ready: model loaded).
	ColdStartSeconds float64
	// BilledGBSeconds is memory × billed duration; CostUSD what the calls cost (GB-s + requests).
	BilledGBSeconds, CostUSD float64
	// InstanceSeconds is the time instances were alive (idle included: what LSTH's keep-alive
	// costs the machine, not billed).
	InstanceSeconds float64
	// Live is the number of instances now; MemoryMB the last pool's memory.
	Live, MemoryMB int
}

// FunctionTier runs function instances as local worker processes. It is safe for concurrent use.
type FunctionTier struct {
	cfg     FunctionConfig
	log     *slog.Logger
	enforce string

	mu     sync.Mutex
	pools  map[poolKey]*pool
	stats  map[string]*FunctionStats
	closed bool
	stop   chan struct{}
	done   chan struct{}
	bg     sync.WaitGroup // cold starts behind busy instances (startBehind)
}

type poolKey struct {
	model    string
	memoryMB int
}

// pool is one (model, memory)'s instances.
type pool struct {
	prov     *Provider
	ka       keepalive.Policy
	idle     []*fnInst // warm and idle, most recently used last
	live     int       // instances starting, busy or idle
	freed    chan struct{}
	lastEnd  time.Time // when the last invocation ended
	runStart time.Time // the current run of invocations (keep-alive's invocation); zero: none open
	busy     int
}

type fnInst struct {
	id, addr string
	born     time.Time
	idleAt   time.Time
	used     bool // has run an invocation (or was pre-warmed); f.mu guards it once in a pool
}

// NewFunctionTier returns a function tier; log may be nil. Close stops its instances.
func NewFunctionTier(cfg FunctionConfig, log *slog.Logger) (*FunctionTier, error) {
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = DefaultFunctionInstances
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
	cfg.Worker.Servers = nil
	if err := cfg.Worker.Validate(); err != nil {
		return nil, fmt.Errorf("function tier: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &FunctionTier{cfg: cfg, log: log, pools: map[poolKey]*pool{}, stats: map[string]*FunctionStats{},
		stop: make(chan struct{}), done: make(chan struct{}), enforce: EnforceThreads}
	if cgroupWritable(cfg.CgroupRoot) {
		f.enforce = EnforceCgroup
	}
	go f.reap()
	return f, nil
}

// Enforcement says how the CPU share is enforced: EnforceCgroup or EnforceThreads.
func (f *FunctionTier) Enforcement() string { return f.enforce }

// Stats returns a model's figures.
func (f *FunctionTier) Stats(model string) FunctionStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.stats[model]; ok {
		return *s
	}
	return FunctionStats{}
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

// Invoke runs call on an instance of model with memoryMB: a warm idle one; when none is idle
// and the pool has room, a new one (cold start) — waited for when no instance is busy, else
// started behind while the call takes whichever instance is free first; at the bound it waits
// for one to free until ctx ends.
// call's duration is billed whatever it returns.
func (f *FunctionTier) Invoke(ctx context.Context, model string, memoryMB int, call func(ctx context.Context, addr string) error) (Invocation, error) {
	memoryMB = f.cfg.Tier.ClampMemory(memoryMB)
	in, cold, err := f.acquire(ctx, model, memoryMB)
	if err != nil {
		return Invocation{}, err
	}
	addr, err := f.address(ctx, model, memoryMB, in)
	if err != nil {
		f.release(model, memoryMB, in, Invocation{Instance: in.id}, time.Now())
		return Invocation{}, err
	}
	start := time.Now()
	cerr := call(ctx, addr)
	end := time.Now()
	inv := Invocation{Instance: in.id, Cold: cold, Duration: end.Sub(start)}
	if cold {
		inv.ColdStart = in.idleAt.Sub(in.born)
	}
	inv.Billed = cost.Billing{Granularity: f.cfg.Tier.Granularity}.Billable(inv.Duration)
	inv.CostUSD = f.cfg.Tier.InvocationCost(memoryMB, inv.Duration)
	f.release(model, memoryMB, in, inv, end)
	return inv, cerr
}

// address is the instance's current address: a worker the provider's supervisor restarted
// (it failed its health checks) listens on a new port, and is waited for until ready.
func (f *FunctionTier) address(ctx context.Context, model string, memoryMB int, in *fnInst) (string, error) {
	f.mu.Lock()
	p := f.pools[poolKey{model, memoryMB}]
	f.mu.Unlock()
	inst, err := p.prov.WaitReady(ctx, in.id)
	if err != nil {
		return "", fmt.Errorf("function tier %s: instance %s: %w", model, in.id, err)
	}
	return inst.Addr, nil
}

// Prewarm starts one instance of model with memoryMB and leaves it idle (a cold start ahead
// of the traffic, as LSTH's pre-warm or Lambda's provisioned concurrency); it is released by
// the keep-alive like any idle instance.
func (f *FunctionTier) Prewarm(ctx context.Context, model string, memoryMB int) error {
	memoryMB = f.cfg.Tier.ClampMemory(memoryMB)
	in, _, err := f.acquire(ctx, model, memoryMB)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pools[poolKey{model, memoryMB}]
	in.idleAt = time.Now()
	in.used = true // its cold start was ahead of the traffic
	p.idle = append(p.idle, in)
	p.busy--
	p.runStart = time.Time{} // a pre-warm is no invocation
	f.signal(p)
	return nil
}

// acquire takes a warm instance or starts one.
func (f *FunctionTier) acquire(ctx context.Context, model string, memoryMB int) (*fnInst, bool, error) {
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, false, errors.New("function tier: closed")
		}
		p, err := f.pool(model, memoryMB)
		if err != nil {
			f.mu.Unlock()
			return nil, false, err
		}
		if n := len(p.idle); n > 0 {
			in := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.enter(time.Now())
			f.mu.Unlock()
			cold := !in.used // started behind: this call waited for (part of) its cold start
			in.used = true
			return in, cold, nil
		}
		if p.live < f.cfg.MaxInstances && p.busy == 0 {
			// Nothing will free sooner than a cold start: wait for this one.
			p.live++
			p.enter(time.Now())
			f.mu.Unlock()
			in, err := f.start(ctx, p, model, memoryMB)
			if err != nil {
				f.mu.Lock()
				p.live--
				p.busy--
				f.signal(p)
				f.mu.Unlock()
				return nil, false, err
			}
			in.used = true
			return in, true, nil
		}
		if p.live < f.cfg.MaxInstances {
			// Busy instances free within a batch's time, far sooner than a cold start: start one
			// behind (it joins the idle ones when ready) and take whichever is free first, as
			// Knative's activator buffers a request for the first ready pod.
			p.live++
			f.bg.Add(1)
			go f.startBehind(p, model, memoryMB)
		}
		freed := p.freed
		f.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false, fmt.Errorf("function tier %s: all %d instances busy: %w", model, f.cfg.MaxInstances, ctx.Err())
		}
	}
}

// startBehind cold-starts an instance of the pool, counted in p.live by the caller, and puts
// it among the idle ones when ready (or, when the tier closed meanwhile, leaves it to the
// pool's provider to stop).
func (f *FunctionTier) startBehind(p *pool, model string, memoryMB int) {
	defer f.bg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	in, err := f.start(ctx, p, model, memoryMB)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		p.live--
		f.log.Warn("function tier: cold start behind busy instances", "model", model, "err", err)
	case f.closed:
		f.stats[model].InstanceSeconds += time.Since(in.born).Seconds()
		f.stats[model].Live--
	default:
		p.idle = append(p.idle, in)
	}
	f.signal(p)
}

// enter counts an invocation starting at now; f.mu is held.
func (p *pool) enter(now time.Time) {
	if p.runStart.IsZero() {
		p.runStart = now
	}
	p.busy++
}

// endRun tells the keep-alive policy of the open run once the pool has been idle for gap at
// now; f.mu is held.
func (p *pool) endRun(now time.Time, gap time.Duration) {
	if p.busy == 0 && !p.runStart.IsZero() && !p.lastEnd.IsZero() && now.Sub(p.lastEnd) >= gap {
		p.ka.Observe(p.runStart, p.lastEnd)
		p.runStart = time.Time{}
	}
}

// signal wakes the callers waiting for an instance; f.mu is held.
func (f *FunctionTier) signal(p *pool) {
	close(p.freed)
	p.freed = make(chan struct{})
}

// pool returns (making) the pool of (model, memoryMB); f.mu is held.
func (f *FunctionTier) pool(model string, memoryMB int) (*pool, error) {
	k := poolKey{model, memoryMB}
	if p, ok := f.pools[k]; ok {
		return p, nil
	}
	wc := f.cfg.Worker
	wc.Args = append(slices.Clone(wc.Args), f.workerArgs(memoryMB)...)
	wc.StateDir = ""
	prov, err := New(wc, f.log.With("tier", "serverless", "memory_mb", memoryMB))
	if err != nil {
		return nil, fmt.Errorf("function tier %s: %w", model, err)
	}
	var ka keepalive.Policy = &keepalive.Fixed{KeepAlive: f.cfg.Tier.KeepAlive}
	if f.cfg.KeepAlive != nil {
		ka = f.cfg.KeepAlive()
	}
	p := &pool{prov: prov, ka: ka, freed: make(chan struct{})}
	f.pools[k] = p
	if _, ok := f.stats[model]; !ok {
		f.stats[model] = &FunctionStats{}
	}
	f.stats[model].MemoryMB = memoryMB
	return p, nil
}

// workerArgs are a function worker's flags for memoryMB: its threads (⌊share⌋, at least one)
// and, below one vCPU and without cgroups, the duty-cycle share.
func (f *FunctionTier) workerArgs(memoryMB int) []string {
	share := f.cfg.Tier.CPUShare(memoryMB)
	args := []string{"--threads", strconv.Itoa(max(1, int(share)))}
	if share < 1 && f.enforce == EnforceThreads {
		args = append(args, "--cpu-share", strconv.FormatFloat(share, 'f', 4, 64))
	}
	return args
}

// start launches an instance and waits until it is ready: the cold start.
func (f *FunctionTier) start(ctx context.Context, p *pool, model string, memoryMB int) (*fnInst, error) {
	born := time.Now()
	inst, err := p.prov.Launch(ctx, provider.Spec{Model: model, Type: fmt.Sprintf("lambda-%dmb", memoryMB), Tier: provider.TierServerless, MemoryMB: memoryMB})
	if err != nil {
		return nil, fmt.Errorf("function tier %s: cold start: %w", model, err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), p.prov.cfg.StartTimeout)
	defer cancel()
	ready, err := p.prov.WaitReady(wctx, inst.ID)
	if err != nil {
		_ = p.prov.Terminate(context.Background(), inst.ID)
		return nil, fmt.Errorf("function tier %s: cold start: %w", model, err)
	}
	if f.enforce == EnforceCgroup {
		// Once its process runs (the model loads at full speed, as Lambda's init phase has
		// its own CPU boost); a worker the supervisor restarts runs unlimited.
		if err := f.limitCPU(p, inst.ID, memoryMB); err != nil {
			f.log.Warn("function tier: cpu.max", "instance", inst.ID, "err", err)
		}
	}
	in := &fnInst{id: inst.ID, addr: ready.Addr, born: born, idleAt: time.Now()}
	f.mu.Lock()
	s := f.stats[model]
	s.ColdStarts++
	s.ColdStartSeconds += in.idleAt.Sub(born).Seconds()
	s.Live++
	f.mu.Unlock()
	f.log.Info("function cold start", "model", model, "memory_mb", memoryMB, "instance", in.id, "cold_start", in.idleAt.Sub(born))
	return in, nil
}

// release returns an instance to its pool after an invocation and bills it.
func (f *FunctionTier) release(model string, memoryMB int, in *fnInst, inv Invocation, end time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.stats[model]; inv.CostUSD > 0 { // an invocation that ran (never zero: the per-request price)
		s.Invocations++
		s.BilledGBSeconds += float64(memoryMB) / 1024 * inv.Billed.Seconds()
		s.CostUSD += inv.CostUSD
	}
	p := f.pools[poolKey{model, memoryMB}]
	in.idleAt = end
	p.idle = append(p.idle, in)
	p.busy--
	p.lastEnd = end
	f.signal(p)
}

// reap releases idle instances past their keep-alive windows, every ReapEvery until Close.
func (f *FunctionTier) reap() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.ReapEvery)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.reapOnce(time.Now())
		}
	}
}

func (f *FunctionTier) reapOnce(now time.Time) {
	type gone struct {
		p     *pool
		model string
		in    *fnInst
	}
	var out []gone
	f.mu.Lock()
	for k, p := range f.pools {
		p.endRun(now, f.cfg.RunGap)
		if !p.runStart.IsZero() {
			continue // a run is going on: its idle instances are part of it
		}
		w := p.ka.Windows(now)
		keep := p.idle[:0]
		for _, in := range p.idle {
			gap := now.Sub(in.idleAt)
			if !p.lastEnd.IsZero() {
				gap = now.Sub(p.lastEnd)
			}
			if w.Loaded(max(gap, 0)) {
				keep = append(keep, in)
				continue
			}
			out = append(out, gone{p, k.model, in})
			p.live--
			f.stats[k.model].Live--
			f.stats[k.model].InstanceSeconds += now.Sub(in.born).Seconds()
		}
		p.idle = keep
	}
	f.mu.Unlock()
	for _, g := range out {
		f.log.Info("function released after keep-alive", "model", g.model, "instance", g.in.id, "idle", now.Sub(g.in.idleAt).Round(time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = g.p.prov.Terminate(ctx, g.in.id)
		cancel()
		f.removeCgroup(g.in.id)
	}
}

// Close stops every instance.
func (f *FunctionTier) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.stop)
	pools := f.pools
	now := time.Now()
	for k, p := range pools {
		for _, in := range p.idle {
			f.stats[k.model].InstanceSeconds += now.Sub(in.born).Seconds()
			f.stats[k.model].Live--
		}
	}
	f.mu.Unlock()
	<-f.done
	f.bg.Wait()
	var errs []error
	for _, p := range pools {
		errs = append(errs, p.prov.Close())
	}
	return errors.Join(errs...)
}

// cgroupWritable reports whether root is a cgroup v2 hierarchy with the cpu controller in which
// this process can make a group.
func cgroupWritable(root string) bool {
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil || !slices.Contains(strings.Fields(string(b)), "cpu") {
		return false
	}
	dir, err := os.MkdirTemp(root, "sloserve-probe-")
	if err != nil {
		return false
	}
	os.Remove(dir)
	return true
}

// limitCPU puts the instance's worker into its own cgroup with cpu.max = share × period.
func (f *FunctionTier) limitCPU(p *pool, id string, memoryMB int) error {
	pid, ok := p.prov.PID(id)
	if !ok || pid == 0 {
		return fmt.Errorf("no process yet")
	}
	dir := f.cgroupDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	const period = 100000
	quota := int(f.cfg.Tier.CPUShare(memoryMB) * period)
	if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", max(quota, 1000), period)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

func (f *FunctionTier) cgroupDir(id string) string {
	root := f.cfg.CgroupRoot
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	return filepath.Join(root, "sloserve-fn-"+strconv.Itoa(os.Getpid())+"-"+id)
}

func (f *FunctionTier) removeCgroup(id string) {
	if f.enforce == EnforceCgroup {
		os.Remove(f.cgroupDir(id))
	}
}
