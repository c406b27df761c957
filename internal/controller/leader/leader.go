package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Config names the Lease and its timings (config.LeaderElection).
type Config struct {
	Client    clientset.Interface
	Namespace string
	Name      string
	Identity  string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's (LeaderElectionConfig).
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
	term   sync.Mutex // held while lead runs
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
// context that ends when leadership is lost (a renewal not done within RenewDeadline) or ctx
// ends; Run waits for lead to return before campaigning again, so two terms of this replica
// never overlap. On ctx's end a held Lease is released, so a follower takes over at once.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: e.cfg.LeaseDuration, RenewDeadline: e.cfg.RenewDeadline,
			RetryPeriod: e.cfg.RetryPeriod, ReleaseOnCancel: true, Name: e.cfg.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					// client-go starts this in a goroutine: the term lock lets Run wait for
					// it, and a term already over when it gets the lock is skipped.
					e.term.Lock()
					defer e.term.Unlock()
					if lctx.Err() != nil {
						return
					}
					e.leader.Store(true)
					defer e.leader.Store(false)
					e.mu.Lock()
					e.terms++
					e.mu.Unlock()
					e.log.Info("leader: started leading", "identity", e.cfg.Identity, "lease", e.cfg.Namespace+"/"+e.cfg.Name)
					lead(lctx)
				},
				OnStoppedLeading: func() {
					e.leader.Store(false)
					e.log.Info("leader: stopped leading", "identity", e.cfg.Identity)
				},
				OnNewLeader: func(id string) {
					e.mu.Lock()
					e.holder = id
					e.mu.Unlock()
					if id != e.cfg.Identity {
						e.log.Info("leader: following", "leader", id, "identity", e.cfg.Identity)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader: %w", err)
		}
		le.Run(ctx) // returns when leadership is lost or ctx ends
		e.term.Lock()
		//lint:ignore SA2001 the empty section waits for the term's lead to return (or to be skipped)
		e.term.Unlock()
	}
	return ctx.Err()
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
