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

// Spec registers one policy.
type Spec struct {
	// Name is the policy's name in configuration files, flags and Summaries; unique.
	Name string
	// Doc is one line: what the policy is, naming its paper and section.
	Doc string
	// Port is the decision it makes: New returns the port's interface.
	Port Port
	// Needs are the facilities the world must provide.
	Needs Needs
	// Options returns a pointer to the policy's default options — the one schema that serve and
	// sim configurations decode into; nil when the policy has none.
	Options func() any
	// New builds one policy for one run from options as Options returned them (possibly
	// changed by a decoder); nil options means the defaults.
	New func(options any) (any, error)
}

// ErrUnknown is returned for a name nobody registered.
var ErrUnknown = errors.New("unknown policy")

var registry = struct {
	sync.RWMutex
	specs map[string]Spec
}{specs: map[string]Spec{}}

// Register adds a policy. It panics on an empty or duplicate name, no port, or no New: a
// registration is code, checked by every test that imports the package.
func Register(s Spec) {
	if s.Name == "" || s.Port == "" || s.New == nil {
		panic(fmt.Sprintf("policy.Register: %q: name, port and New are required", s.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.specs[s.Name]; dup {
		panic(fmt.Sprintf("policy.Register: %q registered twice", s.Name))
	}
	registry.specs[s.Name] = s
}

// Lookup returns the policy registered under name.
func Lookup(name string) (Spec, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.specs[name]
	return s, ok
}

// Names returns the names of the policies of port, sorted.
func Names(port Port) []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for n, s := range registry.specs {
		if s.Port == port {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Specs returns every registration, sorted by name.
func Specs() []Spec {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Spec, 0, len(registry.specs))
	for _, s := range registry.specs {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// build looks name up for port and builds it with options (nil: the defaults).
func build(port Port, name string, options any) (any, error) {
	s, ok := Lookup(name)
	if !ok || s.Port != port {
		return nil, fmt.Errorf("%s policy %q: %w (have %v)", port, name, ErrUnknown, Names(port))
	}
	p, err := s.New(options)
	if err != nil {
		return nil, fmt.Errorf("%s policy %q: %w", port, name, err)
	}
	return p, nil
}

// NewCluster builds the Cluster policy registered under name, with options (nil: its defaults).
func NewCluster(name string, options any) (Cluster, error) {
	p, err := build(PortCluster, name, options)
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
