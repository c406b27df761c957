package policy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Port names the decision a policy makes, and so the interface its New returns.
type Port string

// The ports.
const (
	// PortCluster: Cluster — the instances of several functions on one cluster of servers.
	PortCluster Port = "cluster"
	// PortModel: Model — one model's VM fleet, shared queue, routing and serverless tier.
	PortModel Port = "model"
	// PortEnsemble: an ensemble serving strategy (cocktail.Policy: selection, voting, Alg. 2
	// pool sizing) — several models' pools answering each request by a vote.
	PortEnsemble Port = "ensemble"
)

// Needs are capability flags: what a world must provide for a policy to run in it. A world
// without one of them refuses the policy by its flags, never by its name.
type Needs uint

const (
	// NeedsProfiles: per-configuration latency profiles of every function (INFless §3.3).
	NeedsProfiles Needs = 1 << iota
	// NeedsServers: a cluster of servers with CPU threads and GPU shares to place instances on.
	NeedsServers
)

// Caps are capability flags: what a policy does that the runtime driving it must know (the
// live controller bounds its fleet by them), so that no runtime compares policy names.
type Caps uint

const (
	// CapsScaleToZero: the policy may release an idle model's last instance (its keep-alive
	// decides); other policies keep at least one instance live.
	CapsScaleToZero Caps = 1 << iota
	// CapsConfiguredFleet: the fleet is the configured count; the runtime applies no bounds.
	CapsConfiguredFleet
	// CapsBatchPerType: launches carry a per-type batch size the policy derived from the
	// service curve (MArk §4.3); where the curve is a configured rate rather than a measured
	// one, the runtime's batching policy decides instead.
	CapsBatchPerType
)

// Spec registers one policy.
type Spec struct {
	// Name is the policy's name in configuration files, flags and Summaries; unique per port (one
	// package may register the same name on several ports: one composition, several worlds).
	Name string
	// Doc is one line: what the policy is, naming its paper and section.
	Doc string
	// Port is the decision it makes: New returns the port's interface.
	Port Port
	// Needs are the facilities the world must provide.
	Needs Needs
	// Caps are what the policy does that its runtime must know.
	Caps Caps
	// Options returns a pointer to the policy's default options — the one schema that serve and
	// sim configurations decode into; nil when the policy has none.
	Options func() any
	// New builds one policy for one run in world env, from options as Options returned them
	// (possibly changed by a decoder); nil options means the defaults, or what env.Decode
	// decodes.
	New func(env Env, options any) (any, error)
}

// ErrUnknown is returned for a name nobody registered.
var ErrUnknown = errors.New("unknown policy")

var registry = struct {
	sync.RWMutex
	specs map[key]Spec
}{specs: map[key]Spec{}}

type key struct {
	port Port
	name string
}

// Register adds a policy. It panics on an empty or duplicate name, no port, or no New: a
// registration is code, checked by every test that imports the package.
func Register(s Spec) {
	if s.Name == "" || s.Port == "" || s.New == nil {
		panic(fmt.Sprintf("policy.Register: %q: name, port and New are required", s.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	k := key{s.Port, s.Name}
	if _, dup := registry.specs[k]; dup {
		panic(fmt.Sprintf("policy.Register: %s policy %q registered twice", s.Port, s.Name))
	}
	registry.specs[k] = s
}

// Lookup returns the policy of port registered under name.
func Lookup(port Port, name string) (Spec, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.specs[key{port, name}]
	return s, ok
}

// Names returns the names of the policies of port, sorted.
func Names(port Port) []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for k := range registry.specs {
		if k.port == port {
			out = append(out, k.name)
		}
	}
	sort.Strings(out)
	return out
}

// Specs returns every registration, sorted by port and name.
func Specs() []Spec {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Spec, 0, len(registry.specs))
	for _, s := range registry.specs {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Spec) int {
		if c := strings.Compare(string(a.Port), string(b.Port)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// build looks name up for port and builds it in env with options (nil: the defaults).
func build(port Port, name string, env Env, options any) (any, error) {
	s, ok := Lookup(port, name)
	if !ok {
		return nil, fmt.Errorf("%s policy %q: %w (have %v)", port, name, ErrUnknown, Names(port))
	}
	p, err := s.New(env, options)
	if err != nil {
		return nil, fmt.Errorf("%s policy %q: %w", port, name, err)
	}
	return p, nil
}

// Build builds the policy registered under name on port, with options (nil: its defaults): for
// ports whose interface lives with its policies (PortEnsemble: cocktail.Policy), whose callers
// assert the type.
func Build(port Port, name string, options any) (any, error) {
	return build(port, name, Env{}, options)
}

// NewCluster builds the Cluster policy registered under name, with options (nil: its defaults).
func NewCluster(name string, options any) (Cluster, error) {
	p, err := build(PortCluster, name, Env{}, options)
	if err != nil {
		return nil, err
	}
	c, ok := p.(Cluster)
	if !ok {
		return nil, fmt.Errorf("cluster policy %q: New returned %T, not a policy.Cluster", name, p)
	}
	return c, nil
}

// OptionsAs returns options as *T: the defaults when options is nil, an error naming the policy
// when it is of another type. Policies' New functions start with it.
func OptionsAs[T any](name string, options any, defaults func() T) (T, error) {
	switch o := options.(type) {
	case nil:
		return defaults(), nil
	case *T:
		return *o, nil
	case T:
		return o, nil
	}
	var zero T
	return zero, fmt.Errorf("policy %q: options of type %T, want %T", name, options, zero)
}

// NewModel builds the Model policy registered under name for the world env; its options come
// from env.Decode (the configuration's policies.<name> section) or are the defaults.
func NewModel(name string, env Env) (Model, error) {
	p, err := build(PortModel, name, env, nil)
	if err != nil {
		return Model{}, err
	}
	m, ok := p.(Model)
	if !ok {
		return Model{}, fmt.Errorf("model policy %q: New returned %T, not a policy.Model", name, p)
	}
	m.Name = name
	return m, nil
}

// ModelFactory adapts a model policy's constructor to Spec.New.
func ModelFactory(f func(env Env) (Model, error)) func(Env, any) (any, error) {
	return func(env Env, _ any) (any, error) {
		m, err := f(env)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
}
