package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientset "k8s.io/client-go/kubernetes"
)

// Config names the Lease and its timings (config.LeaderElection).
type Config struct {
	Client    clientset.Interface
	Namespace string
	Name      string
	Identity  string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's (LeaderElectionConfig; see
	// Timings).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Logger receives the leadership changes; nil discards them.
	Logger *slog.Logger
}

// Elector campaigns for the Lease until its context ends; IsLeader and Holder may be called
// from any goroutine.
type Elector struct {
	cfg    Config
	log    *slog.Logger
	leader atomic.Bool
	mu     sync.Mutex
	holder string
	terms  int
}

// New checks cfg and returns an Elector.
func New(cfg Config) (*Elector, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("leader: client must not be nil")
	case cfg.Namespace == "" || cfg.Name == "" || cfg.Identity == "":
		return nil, fmt.Errorf("leader: namespace %q, name %q and identity %q must not be empty", cfg.Namespace, cfg.Name, cfg.Identity)
	case !(cfg.RetryPeriod > 0 && cfg.RenewDeadline > cfg.RetryPeriod && cfg.LeaseDuration > cfg.RenewDeadline):
		return nil, fmt.Errorf("leader: want 0 < retry %v < renew deadline %v < lease duration %v", cfg.RetryPeriod, cfg.RenewDeadline, cfg.LeaseDuration)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Elector{cfg: cfg, log: log}, nil
}

// Run campaigns for the Lease until ctx ends. While this replica holds it, lead runs with a
// context that ends when leadership is lost (a renewal not done within RenewDeadline, or the Lease
// shows another holder) or ctx ends; Run waits for lead to return before campaigning again, so
// two terms of this replica never overlap. On ctx's end a held Lease is released, so a follower
// takes over at once.
//
// The follower is driven by a watch on the Lease (campaign.go): it takes over exactly
// LeaseDuration after it observed the last renewal, on its own clock (Decide), instead of
// client-go's LeaderElector polling every jittered RetryPeriod, which noticed a dead leader up to
// 2 × 1.2 × RetryPeriod late. The Lease, its record and the conditional writes are client-go's
// (resourcelock's LeaderElectionRecord in a coordination.k8s.io Lease), so client-go electors and
// these can share a Lease.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) error {
	c := newCampaign(e, lead)
	return c.run(ctx)
}

// setHolder records the identity last seen holding the Lease.
func (e *Elector) setHolder(id string) {
	e.mu.Lock()
	changed := e.holder != id
	e.holder = id
	e.mu.Unlock()
	if changed && id != "" && id != e.cfg.Identity {
		e.log.Info("leader: following", "leader", id, "identity", e.cfg.Identity)
	}
}

// startTerm marks this replica the leader.
func (e *Elector) startTerm() {
	e.mu.Lock()
	e.terms++
	e.mu.Unlock()
	e.leader.Store(true)
	e.log.Info("leader: started leading", "identity", e.cfg.Identity, "lease", e.cfg.Namespace+"/"+e.cfg.Name)
}

// endTerm marks this replica a follower again (its term's lead has returned).
func (e *Elector) endTerm(why string) {
	e.leader.Store(false)
	e.log.Info("leader: stopped leading", "identity", e.cfg.Identity, "why", why)
}

// IsLeader reports whether this replica holds the Lease now.
func (e *Elector) IsLeader() bool { return e.leader.Load() }

// Holder returns the identity last seen holding the Lease ("" before the first observation).
func (e *Elector) Holder() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holder
}

// Terms returns how many times this replica has started leading.
func (e *Elector) Terms() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.terms
}
