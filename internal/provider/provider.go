package provider

import (
	"context"
	"errors"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
)

// Tier is the part of the fleet an instance belongs to.
type Tier string

// The tiers (ARCHITECTURE.md, Concepts).
const (
	TierVM         Tier = "vm"
	TierServerless Tier = "serverless"
)

// State is an instance's lifecycle state: launching → ready → draining → terminated, with
// interrupted marking a spot instance that received its interruption notice.
type State string

// The lifecycle states.
const (
	StateLaunching   State = "launching"
	StateReady       State = "ready"
	StateDraining    State = "draining"
	StateTerminated  State = "terminated"
	StateInterrupted State = "interrupted"
)

// Spec asks for one instance.
type Spec struct {
	// Model is the model the instance serves.
	Model string
	// Type is the instance type's catalog name (e.g. "c5.large", "local").
	Type string
	// Tier is the tier the instance joins.
	Tier Tier
	// MaxBatch is the instance's own largest batch (INFless non-uniform batching); 0 = policy default.
	MaxBatch int
	// MaxWait is the instance's own batch timeout; 0 = policy default.
	MaxWait time.Duration
	// Resources is the instance's share of a server — CPU threads and GPU SM % (INFless's
	// ⟨c, g⟩) — and Server the server it is placed on. A provider that models servers (the local
	// provider with Config.Servers) allocates them at Launch, refuses a launch that does not fit
	// (ErrNoRoom) and frees them when the instance terminates; the worker runs with Resources.CPU
	// intra-op threads. Zero Resources means no placement (Server is ignored).
	Resources cluster.Resources
	Server    int
	// MemoryMB is a function instance's memory (TierServerless, MB), which sets its CPU share
	// (one vCPU at cost.Serverless.FullVCPUMemoryMB) and its price per GB-second; 0 for a VM.
	MemoryMB int
}

// Instance is one running replica as the provider last saw it.
type Instance struct {
	ID    string
	Spec  Spec
	State State
	// Addr is the base URL of the instance's OIP v2 endpoint (e.g. "http://127.0.0.1:9001").
	Addr string
	// Launched is when Launch was called; Ready when the instance became ready (zero if not yet).
	Launched, Ready time.Time
}

// ErrNotFound is returned by Terminate for an unknown instance id.
var ErrNotFound = errors.New("instance not found")

// ErrNoRoom is returned by Launch when the spec's Resources do not fit its Server.
var ErrNoRoom = errors.New("no room on the server")

// Provider launches and terminates instances. Launch returns at once with the instance in
// StateLaunching (or StateReady when launching is immediate); Instances reports later states.
// Implementations are safe for concurrent use.
type Provider interface {
	Launch(ctx context.Context, spec Spec) (Instance, error)
	Terminate(ctx context.Context, id string) error
	Instances(ctx context.Context) ([]Instance, error)
}

// ReadyNotifier is implemented by a provider that tells when an instance has become ready, so
// that the gateway adds it at once — as Triton behind a load balancer or KServe route to a pod
// as soon as its readiness probe passes — rather than at its next periodic sync (up to
// gateway.sync_interval later; issue #16: the simulator makes a ready instance usable at once).
type ReadyNotifier interface {
	// ReadyEvents returns a channel that receives after an instance became ready. Sends never
	// block the provider: events that come while one is pending are merged into it, so a
	// receiver re-lists the instances on each.
	ReadyEvents() <-chan struct{}
}
