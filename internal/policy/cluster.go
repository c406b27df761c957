package policy

import (
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/profile"
)

// The cluster port: several inference functions on one cluster of CPU+GPU servers, each instance
// with its own batch size, timeout and ⟨cpu, gpu⟩ share and its own batch queue (INFless §3.2).
// The cluster simulator (sim.RunCluster) and the live controller (controller.INFless) both ask a
// Cluster policy every control period with the same view and apply its decision.

// DefaultRateWindow is the window of ClusterView's Rate, 5 s: long enough that Poisson noise at
// tens of requests per second does not trigger scale-ups (±1/√(5R)), short enough to follow the
// burst300 traces' steps. The simulator and the live controller both use it.
const DefaultRateWindow = 5 * time.Second

// Cluster decides a cluster's instances: asked every ControlPeriod with the facts, it
// returns the instances to launch (with their configuration and server), the instances to
// release, and each instance's dispatch weight. Implementations are pure apart from their own
// state: no clock, no I/O. A Cluster policy belongs to one run.
type Cluster interface {
	// Name names the policy in Summaries.
	Name() string
	// Control decides at now. v.Cluster is a copy the policy may modify (e.g. by scheduling on it).
	Control(v ClusterView, now time.Time) (ClusterDecision, error)
}

// ClusterView is what a Cluster policy sees.
type ClusterView struct {
	// Cluster is a copy of the cluster's allocations (draining instances still hold theirs).
	Cluster *cluster.Cluster
	// Beta is the run's β.
	Beta float64
	// Functions are the functions, in the run's order.
	Functions []FunctionView
}

// FunctionView is one function's state.
type FunctionView struct {
	// Index is the function's position in the run; Name and Profile as given.
	Index   int
	Name    string
	Profile profile.INFlessProfile
	// SLO is the function's latency threshold; MeanRPS its offline mean rate.
	SLO     time.Duration
	MeanRPS float64
	// Target is the fraction of its requests that must meet SLO (slo.Spec.Target); 0 = unknown.
	Target float64
	// Rate is R, the arrival rate over the last RateWindow, requests per second; RateNow is the
	// rate over the last ControlPeriod alone (noisier, but it sees a burst at once).
	Rate, RateNow float64
	// Waiting counts its requests held at the function level: no ready instance had room for them
	// (before its first instance, or every queue full under QueueBounder).
	Waiting int
	// Arrivals counts the function's arrivals so far.
	Arrivals int64
	// Instances are the live instances (starting or ready; not draining), in launch order.
	Instances []InstanceView
}

// InstanceView is one live instance.
type InstanceView struct {
	// ID identifies the instance for Release and Weights.
	ID int
	// Launch is its configuration and server.
	Launch InstanceLaunch
	// Ready reports that it accepts requests; Queue is its queue length.
	Ready bool
	Queue int
	// Resources is the ⟨cpu, gpu⟩ it runs on now: Launch.Resources, or the configuration it was
	// lent (ClusterDecision.Lend).
	Resources cluster.Resources
}

// InstanceLaunch asks for one instance.
type InstanceLaunch struct {
	// Function is the function's index.
	Function int
	// Server is where it goes; Resources its ⟨cpu, gpu⟩ share.
	Server    int
	Resources cluster.Resources
	// Batch is its batch size b and Timeout its batch timeout (INFless: t_slo − t_exec).
	Batch   int
	Timeout time.Duration
	// Exec is the predicted batch execution time and Bounds its Eq. 1 rate bounds.
	Exec   time.Duration
	Bounds infless.Bounds
	// Spare marks a headroom instance (infless.Spares): the engine serves with it like any
	// other; the policy reads the mark back in InstanceView.Launch and may preempt it.
	Spare bool
}

// ClusterDecision is a policy's answer.
type ClusterDecision struct {
	// Launch are new instances, placed in order.
	Launch []InstanceLaunch
	// Release are instance IDs to drain: they take no new requests, finish their queue and free
	// their resources.
	Release []int
	// Preempt are instance IDs to stop at once, before the launches are placed: their resources
	// (lent ones included) are free for this step's launches, and the requests queued on them and
	// in their batch in flight go back to the function (arrival times kept, so the lost work counts
	// in their latency) and are dispatched again to its ready instances.
	Preempt []int
	// Weights are dispatch weights (requests per second) by instance ID, for the instances live
	// after the decision; instances without one keep theirs (a new instance starts at r_up).
	Weights map[int]float64
	// Lend, when non-nil, sets the configuration every live instance runs on, by instance ID:
	// at least its Launch.Resources in both dimensions, with a curve in its function's profile;
	// instances absent run on their Launch.Resources. The engine takes back the lent resources
	// that change before it places the launches and lends the new ones after, so a policy
	// decides on the cluster without lending (ClusterView.Cluster minus each instance's
	// Resources − Launch.Resources). An instance's batches run at its current configuration's
	// service time (a batch in flight when it changes finishes its remaining work at the new
	// one); a released instance returns to its Launch.Resources at once. nil keeps the lending
	// as it is (policies that never lend).
	Lend map[int]cluster.Resources
	// Reasons explain the decision, one line per launch, release or setting, each naming the
	// piece that made it; the engine does not read them.
	Reasons []string
}

// QueueDispatcher is implemented by a Cluster policy whose requests go to the ready instance
// with the least queued work per unit of its dispatch weight — (queued + in service + 1) / weight,
// dispatch.WeightedLeastOutstanding over the instance queues — instead of splitting arrivals in
// proportion to the weights (the default, INFless's dispatcher).
type QueueDispatcher interface {
	DispatchByQueue() bool
}

// QueueBounder is implemented by a Cluster policy whose instances hold at most one batch
// waiting (INFless §3.2, Fig. 6(a): a request that arrives while an instance's next batch is
// already full cannot join it): a request for which every ready instance of its function has b
// requests queued waits in the function's queue instead, and goes to the first instance whose
// queue falls below b (one that starts a batch, or becomes ready). INFless drops such a request;
// the simulator holds it, so it counts against the SLO only if it ends up late.
type QueueBounder interface {
	BoundedQueues() bool
}
