package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	"github.com/sloserve/sloserve/internal/provider/functions"
)

// The function tier (provider.TierServerless) on this machine: internal/provider/functions' pools
// (keep-alive, cold starts, billing per invocation: BATCH Eq. 1) over worker processes. A cold
// start is a real worker process: start + model load, measured. The CPU share follows memory
// (one vCPU at cost.Serverless.FullVCPUMemoryMB, 1769 MB): with cgroup v2's cpu.max where this
// process may create cgroups, else by the worker's thread count (⌊share⌋, at least 1) and, below
// one vCPU, the worker's duty-cycle throttle (--cpu-share).

// FunctionConfig configures a function tier.
type FunctionConfig struct {
	// Worker is the local provider configuration its worker processes start with (binary,
	// args, env, start timeout); its Servers are ignored.
	Worker Config
	// Tier is the catalog's serverless tier: prices, granularity, the full-vCPU memory.
	Tier cost.Serverless
	// MaxInstances bounds the instances of one pool (Lambda's concurrency limit); default 4.
	MaxInstances int
	// KeepAlive, ReapEvery and RunGap are functions.Config's.
	KeepAlive func() keepalive.Policy
	ReapEvery time.Duration
	RunGap    time.Duration
	// CgroupRoot is the cgroup v2 mount where per-instance cpu.max groups are made; "" means
	// /sys/fs/cgroup. The tier uses it only when it is a writable cgroup v2 hierarchy with the
	// cpu controller (FunctionTier.Enforcement says which).
	CgroupRoot string
}

// DefaultFunctionInstances is FunctionConfig.MaxInstances' default.
const DefaultFunctionInstances = functions.DefaultInstances

// CPU enforcements of FunctionTier.Enforcement.
const (
	EnforceCgroup  = "cgroup-v2 cpu.max"
	EnforceThreads = "threads+duty-cycle"
)

// FunctionTier, FunctionStats and Invocation are the shared function tier's.
type (
	FunctionTier  = functions.Tier
	FunctionStats = functions.Stats
	Invocation    = functions.Invocation
)

// NewFunctionTier returns a function tier of worker processes; log may be nil. Close stops
// its instances.
func NewFunctionTier(cfg FunctionConfig, log *slog.Logger) (*FunctionTier, error) {
	cfg.Worker.Servers = nil
	if err := cfg.Worker.Validate(); err != nil {
		return nil, fmt.Errorf("function tier: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt := &fnRuntime{cfg: cfg, log: log, enforce: EnforceThreads, provs: map[int]*Provider{}, owner: map[string]*Provider{}}
	if cgroupWritable(cfg.CgroupRoot) {
		rt.enforce = EnforceCgroup
	}
	return functions.New(functions.Config{Tier: cfg.Tier, MaxInstances: cfg.MaxInstances, KeepAlive: cfg.KeepAlive,
		ReapEvery: cfg.ReapEvery, RunGap: cfg.RunGap}, rt, log)
}

// fnRuntime runs function instances as worker processes: one local Provider per memory size
// (its workers' flags set the CPU share).
type fnRuntime struct {
	cfg     FunctionConfig
	log     *slog.Logger
	enforce string

	mu    sync.Mutex
	provs map[int]*Provider    // by memory
	owner map[string]*Provider // by instance
}

// Enforcement implements functions.Runtime.
func (r *fnRuntime) Enforcement() string { return r.enforce }

// provider returns (making) the provider of memoryMB's workers.
func (r *fnRuntime) provider(memoryMB int) (*Provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.provs[memoryMB]; ok {
		return p, nil
	}
	wc := r.cfg.Worker
	wc.Args = append(slices.Clone(wc.Args), r.workerArgs(memoryMB)...)
	wc.StateDir = ""
	p, err := New(wc, r.log.With("tier", "serverless", "memory_mb", memoryMB))
	if err != nil {
		return nil, err
	}
	r.provs[memoryMB] = p
	return p, nil
}

// workerArgs are a function worker's flags for memoryMB: its threads (⌊share⌋, at least one)
// and, below one vCPU and without cgroups, the duty-cycle share.
func (r *fnRuntime) workerArgs(memoryMB int) []string {
	share := r.cfg.Tier.CPUShare(memoryMB)
	args := []string{"--threads", strconv.Itoa(max(1, int(share)))}
	if share < 1 && r.enforce == EnforceThreads {
		args = append(args, "--cpu-share", strconv.FormatFloat(share, 'f', 4, 64))
	}
	return args
}

// Start implements functions.Runtime: a worker process, ready once its model is loaded.
func (r *fnRuntime) Start(ctx context.Context, model string, memoryMB int) (string, string, error) {
	p, err := r.provider(memoryMB)
	if err != nil {
		return "", "", err
	}
	inst, err := p.Launch(ctx, provider.Spec{Model: model, Type: fmt.Sprintf("lambda-%dmb", memoryMB), Tier: provider.TierServerless, MemoryMB: memoryMB})
	if err != nil {
		return "", "", err
	}
	wctx, cancel := context.WithTimeout(context.Background(), p.cfg.StartTimeout)
	defer cancel()
	ready, err := p.WaitReady(wctx, inst.ID)
	if err != nil {
		_ = p.Terminate(context.Background(), inst.ID)
		return "", "", err
	}
	if r.enforce == EnforceCgroup {
		// Once its process runs (the model loads at full speed, as Lambda's init phase has
		// its own CPU boost); a worker the supervisor restarts runs unlimited.
		if err := r.limitCPU(p, inst.ID, memoryMB); err != nil {
			r.log.Warn("function tier: cpu.max", "instance", inst.ID, "err", err)
		}
	}
	r.mu.Lock()
	r.owner[inst.ID] = p
	r.mu.Unlock()
	return inst.ID, ready.Addr, nil
}

func (r *fnRuntime) ownerOf(id string) (*Provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.owner[id]
	if !ok {
		return nil, fmt.Errorf("function instance %s: %w", id, provider.ErrNotFound)
	}
	return p, nil
}

// Addr implements functions.Runtime.
func (r *fnRuntime) Addr(ctx context.Context, id string) (string, error) {
	p, err := r.ownerOf(id)
	if err != nil {
		return "", err
	}
	inst, err := p.WaitReady(ctx, id)
	return inst.Addr, err
}

// Stop implements functions.Runtime.
func (r *fnRuntime) Stop(ctx context.Context, id string) error {
	p, err := r.ownerOf(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.owner, id)
	r.mu.Unlock()
	err = p.Terminate(ctx, id)
	r.removeCgroup(id)
	return err
}

// Close implements functions.Runtime.
func (r *fnRuntime) Close() error {
	r.mu.Lock()
	provs := slices.Collect(maps.Values(r.provs))
	r.mu.Unlock()
	var errs []error
	for _, p := range provs {
		errs = append(errs, p.Close())
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
func (r *fnRuntime) limitCPU(p *Provider, id string, memoryMB int) error {
	pid, ok := p.PID(id)
	if !ok || pid == 0 {
		return fmt.Errorf("no process yet")
	}
	dir := r.cgroupDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	const period = 100000
	quota := int(r.cfg.Tier.CPUShare(memoryMB) * period)
	if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", max(quota, 1000), period)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

func (r *fnRuntime) cgroupDir(id string) string {
	root := r.cfg.CgroupRoot
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	return filepath.Join(root, "sloserve-fn-"+strconv.Itoa(os.Getpid())+"-"+id)
}

func (r *fnRuntime) removeCgroup(id string) {
	if r.enforce == EnforceCgroup {
		os.Remove(r.cgroupDir(id))
	}
}
