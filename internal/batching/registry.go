package batching

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// ErrUnknownPolicy is returned by New for a policy name no factory is registered under.
var ErrUnknownPolicy = errors.New("unknown batching policy")

// Factory builds a Policy from a validated Config.
type Factory func(cfg Config) (Policy, error)

// Registry maps policy names to factories. Packages above this one (e.g. the BATCH analytic
// policy) extend a copy of Builtin with their own entries; there is no global mutable registry.
type Registry map[string]Factory

// builtin holds this package's policies; it is never modified.
var builtin = Registry{
	PolicyNone:    func(cfg Config) (Policy, error) { return NewNone(), nil },
	PolicyFixed:   func(cfg Config) (Policy, error) { return NewFixed(cfg.MaxBatch, cfg.MaxWait), nil },
	PolicyMLProxy: func(cfg Config) (Policy, error) { return NewMLProxy(cfg) },
}

// Builtin returns a fresh Registry holding this package's policies: none, fixed and mlproxy.
func Builtin() Registry {
	r := make(Registry, len(builtin))
	for k, v := range builtin {
		r[k] = v
	}
	return r
}

// Names returns the built-in policy names, sorted.
func Names() []string { return builtin.Names() }

// Names returns the registered policy names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for k := range r {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// New validates cfg and builds the built-in policy it names.
func New(cfg Config) (Policy, error) { return builtin.New(cfg) }

// New validates cfg and builds the policy it names from r.
func (r Registry) New(cfg Config) (Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new batching policy: %w", err)
	}
	f, ok := r[cfg.Policy]
	if !ok {
		return nil, fmt.Errorf("new batching policy %q (known: %v): %w", cfg.Policy, r.Names(), ErrUnknownPolicy)
	}
	p, err := f(cfg)
	if err != nil {
		return nil, fmt.Errorf("new batching policy %q: %w", cfg.Policy, err)
	}
	return p, nil
}

// DecideFunc is a stateless batching decision: the single-behaviour strategy form of a Policy.
type DecideFunc func(q Queue, now time.Time) Decision

// FromFunc adapts a DecideFunc to a Policy that ignores outcomes and reports maxBatch as its
// largest batch.
func FromFunc(maxBatch int, f DecideFunc) Policy { return funcPolicy{max: maxBatch, f: f} }

type funcPolicy struct {
	max int
	f   DecideFunc
}

func (p funcPolicy) Decide(q Queue, now time.Time) Decision { return p.f(q, now) }
func (p funcPolicy) Observe(Outcome, time.Time)             {}
func (p funcPolicy) MaxBatch() int                          { return p.max }
