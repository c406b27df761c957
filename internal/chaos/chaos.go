package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

// Kind is a kind of fault.
type Kind string

// The faults a Monkey injects.
const (
	// Kill sends SIGKILL to the worker's process group: a crash mid-batch.
	Kill Kind = "kill"
	// Hang stops the worker (SIGSTOP) for Config.HangFor, then continues it (SIGCONT): a wedged
	// worker that accepts connections but never answers.
	Hang Kind = "hang"
	// Slow stops and continues the worker in a duty cycle for Config.SlowFor, so that it runs at
	// 1 − Config.SlowDuty of its speed.
	Slow Kind = "slow"
)

// Kinds lists every fault kind.
var Kinds = []Kind{Kill, Hang, Slow}

// Target is the fleet a Monkey injects faults into; *local.Provider implements it.
type Target interface {
	// Instances lists the fleet's instances.
	Instances(ctx context.Context) ([]provider.Instance, error)
	// PID returns the process id of an instance's running worker.
	PID(id string) (int, bool)
}

// Config configures a Monkey.
type Config struct {
	// Every is the time between two faults (duration > 0).
	Every time.Duration
	// Kinds are the faults chosen from, uniformly; empty means all of Kinds.
	Kinds []Kind
	// HangFor is how long a hung worker stays stopped (duration > 0).
	HangFor time.Duration
	// SlowFor is how long a worker stays slow (duration > 0).
	SlowFor time.Duration
	// SlowDuty is the fraction of time, in [0, 1), a slow worker spends stopped.
	SlowDuty float64
	// SlowPeriod is the period of the slow duty cycle (duration > 0).
	SlowPeriod time.Duration
	// MinHealthy is how many ready instances of a model are left untouched: a fault is injected
	// only into a model that has more than MinHealthy ready instances not already faulted.
	MinHealthy int
	// Model restricts faults to one model's instances; "" means any model.
	Model string
	// Seed seeds the choice of instances and kinds.
	Seed uint64
}

// DefaultConfig returns a fault every 3 s, hangs and slow periods of 2 s (slow = stopped 80 %
// of every 50 ms), and one healthy instance per model kept.
func DefaultConfig() Config {
	return Config{Every: 3 * time.Second, HangFor: 2 * time.Second, SlowFor: 2 * time.Second, SlowDuty: 0.8,
		SlowPeriod: 50 * time.Millisecond, MinHealthy: 1, Seed: 1}
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Every <= 0:
		return fmt.Errorf("chaos.every: must be > 0, got %v", c.Every)
	case c.HangFor <= 0:
		return fmt.Errorf("chaos.hang_for: must be > 0, got %v", c.HangFor)
	case c.SlowFor <= 0:
		return fmt.Errorf("chaos.slow_for: must be > 0, got %v", c.SlowFor)
	case !(c.SlowDuty >= 0 && c.SlowDuty < 1):
		return fmt.Errorf("chaos.slow_duty: must be in [0, 1), got %v", c.SlowDuty)
	case c.SlowPeriod <= 0:
		return fmt.Errorf("chaos.slow_period: must be > 0, got %v", c.SlowPeriod)
	case c.MinHealthy < 0:
		return fmt.Errorf("chaos.min_healthy: must be ≥ 0, got %d", c.MinHealthy)
	}
	for _, k := range c.Kinds {
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("chaos.kinds: %q is not one of %v", k, Kinds)
		}
	}
	return nil
}

// Event is one injected fault.
type Event struct {
	// At is when the fault was injected.
	At time.Time
	// Kind is the fault.
	Kind Kind
	// Instance and PID name the victim.
	Instance string
	PID      int
}

// Choice is what Choose picked.
type Choice struct {
	// Instance is the victim's id; "" when no instance may be faulted now.
	Instance string
	// Kind is the fault.
	Kind Kind
	// Reason says why, as a constant string.
	Reason string
}

// Choose picks a victim among insts (ready instances of model, or of any model when model is
// ""; never one in busy) and a fault kind, with rng. It leaves minHealthy ready, unfaulted
// instances of the victim's model. Choose is pure given rng.
func Choose(rng *rand.Rand, insts []provider.Instance, busy map[string]bool, kinds []Kind, model string, minHealthy int) Choice {
	byModel := map[string][]string{}
	for _, in := range insts {
		if in.State != provider.StateReady || busy[in.ID] || (model != "" && in.Spec.Model != model) {
			continue
		}
		byModel[in.Spec.Model] = append(byModel[in.Spec.Model], in.ID)
	}
	var pool []string
	for _, ids := range byModel {
		if len(ids) > minHealthy {
			pool = append(pool, ids...)
		}
	}
	if len(pool) == 0 {
		return Choice{Reason: "no instance can be faulted while keeping min_healthy"}
	}
	sort.Strings(pool) // map order must not change the choice
	if len(kinds) == 0 {
		kinds = Kinds
	}
	return Choice{Instance: pool[rng.IntN(len(pool))], Kind: kinds[rng.IntN(len(kinds))], Reason: "random"}
}

// Monkey injects faults into a Target. Step and Run may be called from one goroutine; Events
// and Counts from any.
type Monkey struct {
	t   Target
	cfg Config
	log *slog.Logger
	rng *rand.Rand

	mu      sync.Mutex
	busy    map[string]bool // instances with a hang or slow period under way
	stopped map[int]bool    // pids currently SIGSTOPped
	events  []Event
	wg      sync.WaitGroup
	quit    chan struct{}
	once    sync.Once
}

// New returns a Monkey over t; log may be nil.
func New(t Target, cfg Config, log *slog.Logger) (*Monkey, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Monkey{t: t, cfg: cfg, log: log, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		busy: map[string]bool{}, stopped: map[int]bool{}, quit: make(chan struct{})}, nil
}

// ErrNoVictim means Step found no instance it may fault.
var ErrNoVictim = errors.New("chaos: no instance may be faulted now")

// Step injects one fault now and returns it; a hang or slow period continues in the
// background until it ends or Stop is called.
func (m *Monkey) Step(ctx context.Context, now time.Time) (Event, error) {
	insts, err := m.t.Instances(ctx)
	if err != nil {
		return Event{}, fmt.Errorf("chaos: list instances: %w", err)
	}
	m.mu.Lock()
	c := Choose(m.rng, insts, m.busy, m.cfg.Kinds, m.cfg.Model, m.cfg.MinHealthy)
	m.mu.Unlock()
	if c.Instance == "" {
		return Event{}, ErrNoVictim
	}
	pid, ok := m.t.PID(c.Instance)
	if !ok {
		return Event{}, ErrNoVictim
	}
	ev := Event{At: now, Kind: c.Kind, Instance: c.Instance, PID: pid}
	switch c.Kind {
	case Kill:
		err = syscall.Kill(-pid, syscall.SIGKILL)
	case Hang:
		err = m.stopFor(c.Instance, pid, m.cfg.HangFor, m.cfg.HangFor, 0)
	case Slow:
		run := time.Duration(float64(m.cfg.SlowPeriod) * (1 - m.cfg.SlowDuty))
		err = m.stopFor(c.Instance, pid, m.cfg.SlowFor, m.cfg.SlowPeriod-run, run)
	}
	if err != nil {
		return ev, fmt.Errorf("chaos: %s %s (pid %d): %w", c.Kind, c.Instance, pid, err)
	}
	m.mu.Lock()
	m.events = append(m.events, ev)
	m.mu.Unlock()
	m.log.Info("chaos: fault injected", "kind", c.Kind, "instance", c.Instance, "pid", pid)
	return ev, nil
}

// stopFor stops pid's group for `stop`, runs it for `run`, and so on until `total` has passed
// (a hang is one stop of `total`); it returns once the first SIGSTOP is sent.
func (m *Monkey) stopFor(id string, pid int, total, stop, run time.Duration) error {
	if err := m.signal(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	m.mu.Lock()
	m.busy[id] = true
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			m.signal(pid, syscall.SIGCONT)
			m.mu.Lock()
			delete(m.busy, id)
			m.mu.Unlock()
		}()
		end := time.NewTimer(total)
		defer end.Stop()
		t := time.NewTimer(stop)
		defer t.Stop()
		stopped := true
		for {
			select {
			case <-end.C:
				return
			case <-m.quit:
				return
			case <-t.C:
				if stopped {
					m.signal(pid, syscall.SIGCONT)
					t.Reset(run)
				} else {
					m.signal(pid, syscall.SIGSTOP)
					t.Reset(stop)
				}
				stopped = !stopped
			}
		}
	}()
	return nil
}

func (m *Monkey) signal(pid int, sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sig == syscall.SIGSTOP {
		m.stopped[pid] = true
	} else {
		delete(m.stopped, pid)
	}
	return syscall.Kill(-pid, sig)
}

// Run injects a fault every cfg.Every until ctx is done, then Stops; it returns ctx's error.
func (m *Monkey) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Every)
	defer t.Stop()
	defer m.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-t.C:
			if _, err := m.Step(ctx, now); err != nil && !errors.Is(err, ErrNoVictim) {
				m.log.Warn("chaos step failed", "err", err)
			}
		}
	}
}

// Stop ends every hang and slow period under way (SIGCONT) and waits for them.
func (m *Monkey) Stop() {
	m.once.Do(func() { close(m.quit) })
	m.wg.Wait()
	m.mu.Lock()
	for pid := range m.stopped {
		syscall.Kill(-pid, syscall.SIGCONT)
	}
	clear(m.stopped)
	m.mu.Unlock()
}

// Events returns the faults injected so far, in order.
func (m *Monkey) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

// Counts returns the number of faults injected so far, per kind.
func (m *Monkey) Counts() map[Kind]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Kind]int{}
	for _, e := range m.events {
		out[e.Kind]++
	}
	return out
}
