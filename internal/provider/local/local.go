package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/provider"
)

// Config configures the local provider. Zero fields take the defaults named below.
type Config struct {
	// Binary is the sloserve executable to run as `Binary worker ...`; "" means os.Executable().
	Binary string
	// Args are extra arguments after `worker --addr 127.0.0.1:0 --models <model>`
	// (e.g. "--runtime", "native"). A launch whose Spec.Resources.CPU is positive appends
	// `--threads <CPU>` after them; the worker's flag parsing keeps the last value of a repeated
	// flag, so the spec's threads override a "--threads" given here. Args must hold flags only
	// (a positional argument would end flag parsing before the appended --threads).
	Args []string
	// Env is added to the worker's environment (KEY=value).
	Env []string
	// StartTimeout bounds how long a worker may take to print its address and become ready;
	// default DefaultStartTimeout.
	StartTimeout time.Duration
	// HealthInterval is the period of /v2/health/ready checks of a ready worker; default
	// DefaultHealthInterval.
	HealthInterval time.Duration
	// HealthTimeout bounds one health check; default DefaultHealthTimeout. After a failed check
	// the next one comes after min(HealthInterval, DefaultHealthRecheck), and a worker that
	// fails HealthFailures checks is killed at once (SIGKILL: it answers nothing, and a stopped
	// one cannot act on SIGTERM), so that a stopped (SIGSTOP) or hung worker is restarted after
	// about HealthInterval + HealthFailures × (HealthTimeout + DefaultHealthRecheck): ~4.5 s
	// with the defaults.
	HealthTimeout time.Duration
	// HealthFailures is how many consecutive failed checks make a worker be killed and restarted;
	// default DefaultHealthFailures.
	HealthFailures int
	// StopTimeout is how long a worker has between SIGTERM and SIGKILL; default DefaultStopTimeout.
	StopTimeout time.Duration
	// RestartBackoff is the pause before restarting a crashed worker; default DefaultRestartBackoff.
	RestartBackoff time.Duration
	// StateDir is a directory where each running worker is recorded in a pidfile, so that a
	// restarted provider kills the workers a crashed one left (Reap); "" records nothing.
	StateDir string
	// Servers is the capacity of each server (CPU threads, GPU SM %) that instances are placed
	// on by Spec.Server and Spec.Resources: Launch allocates the resources and refuses a launch
	// that does not fit (provider.ErrNoRoom); they are freed once the terminated instance's
	// worker has exited. Empty means no accounting: Spec.Server is ignored and Spec.Resources
	// only sets the worker's threads.
	Servers []cluster.Resources
}

// Defaults of Config.
const (
	DefaultStartTimeout   = 30 * time.Second
	DefaultHealthInterval = time.Second
	DefaultHealthFailures = 3
	DefaultHealthTimeout  = time.Second
	DefaultHealthRecheck  = 250 * time.Millisecond
	DefaultStopTimeout    = 5 * time.Second
	DefaultRestartBackoff = 500 * time.Millisecond
)

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"start_timeout", c.StartTimeout}, {"health_interval", c.HealthInterval}, {"health_timeout", c.HealthTimeout}, {"stop_timeout", c.StopTimeout}, {"restart_backoff", c.RestartBackoff}} {
		if d.v < 0 {
			return fmt.Errorf("local.%s: must be ≥ 0, got %v", d.name, d.v)
		}
	}
	if c.HealthFailures < 0 {
		return fmt.Errorf("local.health_failures: must be ≥ 0, got %d", c.HealthFailures)
	}
	for i, r := range c.Servers {
		if r.CPU < 0 || r.GPU < 0 || r.IsZero() {
			return fmt.Errorf("local.servers[%d]: must be non-negative and non-zero, got cpu %d gpu %d", i, r.CPU, r.GPU)
		}
	}
	return nil
}

func (c *Config) fill() error {
	if c.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("local provider: find own executable: %w", err)
		}
		c.Binary = exe
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.StartTimeout, DefaultStartTimeout)
	def(&c.HealthInterval, DefaultHealthInterval)
	def(&c.HealthTimeout, DefaultHealthTimeout)
	def(&c.StopTimeout, DefaultStopTimeout)
	def(&c.RestartBackoff, DefaultRestartBackoff)
	if c.HealthFailures == 0 {
		c.HealthFailures = DefaultHealthFailures
	}
	return nil
}

// Provider runs instances as worker processes. It is safe for concurrent use.
type Provider struct {
	cfg  Config
	log  *slog.Logger
	http *http.Client

	mu     sync.Mutex
	insts  map[string]*proc
	seq    int
	closed bool
	// servers holds Config.Servers with the allocations of the instances whose workers have
	// not exited after Terminate; nil without Config.Servers. Guarded by mu.
	servers *cluster.Cluster
	// readyc receives (coalesced) when an instance becomes ready (provider.ReadyNotifier).
	readyc chan struct{}
}

var (
	_ provider.Provider      = (*Provider)(nil)
	_ provider.ReadyNotifier = (*Provider)(nil)
)

// New returns a Provider; log may be nil.
func New(cfg Config, log *slog.Logger) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.StateDir != "" {
		if _, err := Reap(cfg.StateDir, log); err != nil {
			return nil, err
		}
	}
	p := &Provider{cfg: cfg, log: log, http: &http.Client{Timeout: 2 * time.Second}, insts: map[string]*proc{}, readyc: make(chan struct{}, 1)}
	if len(cfg.Servers) > 0 {
		p.servers = cluster.NewFrom(cfg.Servers)
	}
	return p, nil
}

// proc supervises one instance: its current process and its restarts.
type proc struct {
	p    *Provider
	stop chan struct{} // closed by Terminate
	done chan struct{} // closed when the supervisor has exited and no process runs
	// placed is set when the instance holds inst.Spec.Resources on server inst.Spec.Server;
	// the supervisor releases them once, as it exits.
	placed bool

	mu       sync.Mutex
	inst     provider.Instance
	pid      int
	restarts int
	changed  chan struct{} // closed and replaced on every state change
}

// Launch starts a worker for spec.Model and returns at once with the instance launching.
// With Config.Servers and non-zero spec.Resources it first allocates the resources on
// spec.Server: a server out of range or negative resources are an error, resources that do not
// fit the server's free capacity an error wrapping provider.ErrNoRoom; either way nothing is
// launched. A crashed worker that the supervisor restarts keeps the allocation.
func (p *Provider) Launch(ctx context.Context, spec provider.Spec) (provider.Instance, error) {
	if spec.Model == "" {
		return provider.Instance{}, fmt.Errorf("local launch: spec.model must not be empty")
	}
	if r := spec.Resources; r.CPU < 0 || r.GPU < 0 {
		return provider.Instance{}, fmt.Errorf("local launch %s: spec.resources must be ≥ 0, got cpu %d gpu %d", spec.Model, r.CPU, r.GPU)
	}
	if spec.Type == "" {
		spec.Type = "local"
	}
	if spec.Tier == "" {
		spec.Tier = provider.TierVM
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return provider.Instance{}, errors.New("local launch: provider closed")
	}
	placed := p.servers != nil && !spec.Resources.IsZero()
	if placed {
		if err := p.place(spec); err != nil {
			return provider.Instance{}, err
		}
	}
	p.seq++
	id := spec.Model + "-" + strconv.Itoa(p.seq)
	pr := &proc{p: p, stop: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{}), placed: placed,
		inst: provider.Instance{ID: id, Spec: spec, State: provider.StateLaunching, Launched: time.Now()}}
	p.insts[id] = pr
	go pr.supervise()
	p.log.Info("launching worker", "instance", id, "model", spec.Model, "cpu", spec.Resources.CPU, "gpu", spec.Resources.GPU, "server", spec.Server)
	return pr.snapshot(), nil
}

// place allocates spec.Resources on spec.Server; p.mu is held.
func (p *Provider) place(spec provider.Spec) error {
	j, r := spec.Server, spec.Resources
	if j < 0 || j >= p.servers.Len() {
		return fmt.Errorf("local launch %s: spec.server %d out of range [0, %d)", spec.Model, j, p.servers.Len())
	}
	if free := p.servers.Free(j); !free.Fits(r) {
		return fmt.Errorf("local launch %s on server %d: wants cpu %d gpu %d, free cpu %d gpu %d: %w",
			spec.Model, j, r.CPU, r.GPU, free.CPU, free.GPU, provider.ErrNoRoom)
	}
	if err := p.servers.Place(j, r); err != nil {
		return fmt.Errorf("local launch %s: %w", spec.Model, err) // unreachable: checked above
	}
	return nil
}

// release frees what a supervisor's instance holds; called once, by the supervisor as it exits.
func (pr *proc) release() {
	if !pr.placed {
		return
	}
	p := pr.p
	p.mu.Lock()
	defer p.mu.Unlock()
	spec := pr.inst.Spec // immutable after Launch
	if err := p.servers.Release(spec.Server, spec.Resources); err != nil {
		p.log.Error("release worker resources", "instance", pr.inst.ID, "err", err) // a bookkeeping bug
	}
	pr.placed = false
}

// Cluster returns a snapshot of Config.Servers with what the instances hold on them, or nil
// without Config.Servers. The snapshot is the caller's; it is not updated.
func (p *Provider) Cluster() *cluster.Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.servers == nil {
		return nil
	}
	return p.servers.Clone()
}

// Terminate stops an instance's worker (SIGTERM, then SIGKILL after StopTimeout) and returns
// once it has exited or ctx is done. The instance's resources are freed when its worker has
// exited: before Terminate returns nil, later when ctx ends first.
func (p *Provider) Terminate(ctx context.Context, id string) error {
	p.mu.Lock()
	pr, ok := p.insts[id]
	if ok {
		delete(p.insts, id)
	}
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("local terminate %s: %w", id, provider.ErrNotFound)
	}
	close(pr.stop)
	select {
	case <-pr.done:
		p.log.Info("worker terminated", "instance", id)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("local terminate %s: %w", id, ctx.Err())
	}
}

// ReadyEvents receives after an instance became ready (provider.ReadyNotifier); events that
// come while one is pending are merged into it.
func (p *Provider) ReadyEvents() <-chan struct{} { return p.readyc }

// notifyReady sends a ready event without blocking.
func (p *Provider) notifyReady() {
	select {
	case p.readyc <- struct{}{}:
	default:
	}
}

// Instances returns every instance not yet terminated, as last seen.
func (p *Provider) Instances(ctx context.Context) ([]provider.Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]provider.Instance, 0, len(p.insts))
	for _, pr := range p.insts {
		out = append(out, pr.snapshot())
	}
	return out, nil
}

// WaitReady returns the instance once it is ready, or an error when ctx ends first.
func (p *Provider) WaitReady(ctx context.Context, id string) (provider.Instance, error) {
	p.mu.Lock()
	pr, ok := p.insts[id]
	p.mu.Unlock()
	if !ok {
		return provider.Instance{}, fmt.Errorf("local wait %s: %w", id, provider.ErrNotFound)
	}
	for {
		pr.mu.Lock()
		inst, ch := pr.inst, pr.changed
		pr.mu.Unlock()
		if inst.State == provider.StateReady {
			return inst, nil
		}
		select {
		case <-ch:
		case <-pr.done:
			return inst, fmt.Errorf("local wait %s: instance terminated", id)
		case <-ctx.Done():
			return inst, fmt.Errorf("local wait %s: %w (state %s)", id, ctx.Err(), inst.State)
		}
	}
}

// Close terminates every instance and waits for the processes to exit.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	ids := make([]string, 0, len(p.insts))
	for id := range p.insts {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := p.Terminate(context.Background(), id); err != nil && !errors.Is(err, provider.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (pr *proc) snapshot() provider.Instance {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.inst
}

func (pr *proc) set(f func(*provider.Instance)) {
	pr.mu.Lock()
	f(&pr.inst)
	close(pr.changed)
	pr.changed = make(chan struct{})
	pr.mu.Unlock()
}

// supervise runs the worker, restarting it whenever it exits or fails its health checks, until
// stop is closed.
func (pr *proc) supervise() {
	defer close(pr.done)
	defer pr.release()
	log := pr.p.log.With("instance", pr.inst.ID)
	for {
		err := pr.runOnce(log)
		select {
		case <-pr.stop:
			pr.set(func(in *provider.Instance) { in.State = provider.StateTerminated; in.Addr = "" })
			return
		default:
		}
		pr.mu.Lock()
		pr.restarts++
		n := pr.restarts
		pr.mu.Unlock()
		log.Warn("worker exited; restarting", "err", err, "restarts", n)
		pr.set(func(in *provider.Instance) { in.State = provider.StateLaunching; in.Addr = ""; in.Ready = time.Time{} })
		select {
		case <-pr.stop:
			pr.set(func(in *provider.Instance) { in.State = provider.StateTerminated })
			return
		case <-time.After(pr.p.cfg.RestartBackoff):
		}
	}
}

// listenRE finds the worker's address in its log line "listening on http://host:port".
var listenRE = regexp.MustCompile(`listening on (https?://[^\s"]+)`)

// runOnce starts one worker process and supervises it until it exits, fails its health checks,
// or stop is closed; it always leaves no process behind.
func (pr *proc) runOnce(log *slog.Logger) error {
	cfg := pr.p.cfg
	args := workerArgs(pr.inst.Spec, cfg.Args)
	cmd := exec.Command(cfg.Binary, args...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	// Own process group, so that stopping reaches the worker's children; and the kernel kills
	// the worker if this process dies, so a crash of sloserve leaks no worker.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("start %s: %w", cfg.Binary, err)
	}
	w.Close()
	pr.mu.Lock()
	pr.pid = cmd.Process.Pid
	pr.mu.Unlock()
	pidfile := pr.p.record(cmd.Process.Pid, cmd.Args)
	defer func() {
		pr.mu.Lock()
		pr.pid = 0
		pr.mu.Unlock()
		if pidfile != "" {
			os.Remove(pidfile)
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addrc := make(chan string, 1)
	go scanOutput(r, addrc, log)

	kill := func(reason string) error {
		stopProcess(cmd.Process, exited, cfg.StopTimeout)
		return errors.New(reason)
	}
	// Wait for the address line.
	start := time.NewTimer(cfg.StartTimeout)
	defer start.Stop()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-exited:
		return fmt.Errorf("worker exited before listening: %v", err)
	case <-start.C:
		return kill("worker did not print its address within " + cfg.StartTimeout.String())
	case <-pr.stop:
		return kill("stopped")
	}
	pr.set(func(in *provider.Instance) { in.Addr = addr })
	// Wait for readiness, then check health periodically.
	tick := time.NewTicker(min(cfg.HealthInterval, 50*time.Millisecond))
	defer tick.Stop()
	ready, fails := false, 0
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("worker exited: %v", err)
		case <-pr.stop:
			return kill("stopped")
		case <-start.C:
			if !ready {
				return kill("worker not ready within " + cfg.StartTimeout.String())
			}
		case <-tick.C:
			ok := pr.p.healthy(addr, cfg.HealthTimeout)
			switch {
			case ok && !ready:
				ready = true
				tick.Reset(cfg.HealthInterval)
				pr.set(func(in *provider.Instance) { in.State = provider.StateReady; in.Ready = time.Now() })
				pr.p.notifyReady()
				log.Info("worker ready", "addr", addr)
			case ok:
				if fails > 0 {
					tick.Reset(cfg.HealthInterval)
				}
				fails = 0
			case ready:
				fails++
				tick.Reset(min(cfg.HealthInterval, DefaultHealthRecheck))
				if fails >= cfg.HealthFailures {
					// It answers nothing (hung, or stopped with SIGSTOP, which holds SIGTERM
					// pending): no grace, SIGKILL at once.
					stopProcess(cmd.Process, exited, 0)
					return fmt.Errorf("worker failed %d health checks", fails)
				}
			}
		}
	}
}

// workerArgs is the worker's command line after the binary: the configured args, then the
// spec's threads (the last of repeated flags wins, so they override a configured --threads).
func workerArgs(spec provider.Spec, extra []string) []string {
	args := append([]string{"worker", "--addr", "127.0.0.1:0", "--models", spec.Model}, extra...)
	if spec.Resources.CPU > 0 {
		args = append(args, "--threads", strconv.Itoa(spec.Resources.CPU))
	}
	return args
}

func (p *Provider) healthy(addr string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/v2/health/ready", nil)
	if err != nil {
		return false
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// scanOutput reads the worker's output: the first address line goes to addrc, the rest is
// logged at debug level. It returns when the worker closes its output.
func scanOutput(r io.ReadCloser, addrc chan<- string, log *slog.Logger) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if !found {
			if m := listenRE.FindStringSubmatch(line); m != nil {
				found = true
				addrc <- m[1]
				continue
			}
		}
		log.Debug("worker", "line", line)
	}
}

// stopProcess sends SIGTERM to the worker's process group, and SIGKILL after grace; it returns
// once the process has been reaped.
func stopProcess(p *os.Process, exited <-chan error, grace time.Duration) {
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		<-exited
	}
	// Children that outlived the worker in its group.
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}
