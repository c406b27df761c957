package config

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/policy"
	_ "github.com/sloserve/sloserve/internal/policy/builtin" // the registered policies
)

// Controller policies (Controller.Policy): registered names (internal/policy), and two aliases.
const (
	// ControllerSloserve is sloserve's combined policy (policy/sloserve): MArk's planner sizes a
	// model's fleet while it has traffic; without a serverless tier (the live providers have
	// none) and with min_instances 0, INFless's LSTH keep-alive decides when an idle model's
	// instances go and when they are pre-warmed. The default.
	ControllerSloserve = "sloserve"
	// ControllerNone keeps each model's configured instance count: the fixed policy with
	// count = instances (an alias).
	ControllerNone = "none"
	// ControllerMark is MArk's predictive planner (policy/mark).
	ControllerMark = "mark"
	// ControllerTargetTracking is SageMaker-style target tracking: the sagemaker policy (an
	// alias).
	ControllerTargetTracking = "target-tracking"
	// ControllerKnative is Knative's concurrency autoscaler (policy/baseline's knative).
	ControllerKnative = "knative"
	// ControllerINFless is INFless live (controller.INFless): the simulator's INFless cluster
	// policy — α-band dispatch and scaling, Alg. 1 placement of per-instance ⟨b, c, g⟩ on
	// controller.cluster's servers, defragmentation, LSTH keep-alive — over the local provider.
	ControllerINFless = "infless"
)

// PolicyName returns the registered name and port of a controller.policy value: the aliases
// none (fixed) and target-tracking (sagemaker) resolved, a model policy before a cluster one
// unless the model registration needs servers (then the live world runs the cluster one).
func PolicyName(p string) (policy.Port, string, bool) {
	switch p {
	case ControllerNone:
		p = "fixed"
	case ControllerTargetTracking:
		p = "sagemaker"
	}
	// A model registration that needs servers points at the cluster world (INFless's).
	if s, ok := policy.Lookup(policy.PortModel, p); ok && s.Needs&policy.NeedsServers == 0 {
		return policy.PortModel, p, true
	}
	if _, ok := policy.Lookup(policy.PortCluster, p); ok {
		return policy.PortCluster, p, true
	}
	return "", p, false
}

// ControllerPolicies lists the accepted Controller.Policy values: the aliases and every
// registered model and cluster policy.
func ControllerPolicies() []string {
	out := []string{ControllerNone, ControllerTargetTracking}
	out = append(out, policy.Names(policy.PortModel)...)
	for _, n := range policy.Names(policy.PortCluster) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Live controller defaults. MArk's own settings (P_s/P_u/P_w = 5 s / 1 min / 60, τ = 5 min,
// cool-down 6 min) fit cloud VMs that take minutes to launch and bill by the minute; local
// workers start in about a second, so the live loop runs the same algorithm on a 25× shorter
// clock: samples of 1 s, units of 5 s, a one-minute window, τ = one unit.
const (
	// DefaultControllerSample is the control loop's period and P_s.
	DefaultControllerSample = time.Second
	// DefaultControllerUnit is P_u, the planning unit.
	DefaultControllerUnit = 5 * time.Second
	// DefaultControllerMaxInstances bounds each model's fleet (instances).
	DefaultControllerMaxInstances = 8
	// DefaultLocalPricePerHour is the nominal price of one local worker, in USD/hour: half of an
	// on-demand c5.large ($0.085/h for 2 vCPU), i.e. one vCPU, since a worker computes one batch
	// per core. It only makes costs comparable; a local process costs nothing.
	DefaultLocalPricePerHour = 0.0425
	// DefaultLocalLaunchDelay is the time a local worker takes to become ready (model loaded).
	DefaultLocalLaunchDelay = 2 * time.Second
)

// Controller configures the control loop that sizes each model's fleet.
type Controller struct {
	// Policy is the scaling policy, by its registered name (internal/policy; `sloserve sim
	// --list-policies`): sloserve (the default: MArk's planner + LSTH keep-alive), mark,
	// sagemaker (target tracking), knative, fixed, mlproxy, or infless (INFless live on
	// controller.cluster). "none" is fixed at each model's configured instance count and
	// "target-tracking" is sagemaker. Its options are policies.<policy>, the same schema as a
	// sim config's (docs/config.md, "One options schema").
	Policy string `yaml:"policy"`
	// SampleInterval is the loop's period and the policies' sampling period (MArk's P_s)
	// (duration).
	SampleInterval time.Duration `yaml:"sample_interval"`
	// Unit is the live clock's planning unit, a multiple of sample_interval (duration): it
	// stands for the papers' one minute. The live preset (docs/config.md) derives each
	// policy's time parameters from it: MArk's P_u = unit, P_w = 1 min of units, τ = one unit,
	// cool-down 6 units; target tracking's metric period; LSTH's bins.
	Unit time.Duration `yaml:"unit"`
	// MinInstances and MaxInstances bound each model's fleet (instances). Only sloserve and
	// infless go below one instance, when min_instances is 0 and LSTH's keep-alive windows have
	// passed; the other autoscalers keep at least one.
	MinInstances int `yaml:"min_instances"`
	MaxInstances int `yaml:"max_instances"`
	// Cluster is the servers the infless policy places instances on (the local provider accounts
	// for them); other policies ignore it.
	Cluster Cluster `yaml:"cluster"`
	// LeaderElection runs the loop on one of several gateway replicas only (the Lease holder);
	// the others serve and follow the fleet.
	LeaderElection LeaderElection `yaml:"leader_election"`
	// Peers are the other replicas whose counters the leader's loop adds to its own.
	Peers Peers `yaml:"peers"`
}

// Cluster describes identical servers of CPU threads and GPU SM share (INFless's cluster model).
type Cluster struct {
	// Servers is the number of servers (servers).
	Servers int `yaml:"servers"`
	// CPU is each server's CPU threads (threads; 0 = this machine's, runtime.NumCPU); a local
	// worker runs with its instance's threads as onnxruntime intra-op threads.
	CPU int `yaml:"cpu"`
	// GPU is each server's GPU SM share (percent; 100 = one GPU). 0: CPU only, as on a machine
	// without a GPU.
	GPU int `yaml:"gpu"`
	// OperatorStore is an operator store file (`sloserve profile --operators --store FILE
	// --models M.onnx`; docs/infless.md "Operator-level prediction"): INFless plans every model
	// whose operator graph it holds with COP's predicted ⟨b, c⟩ service times at each of the
	// store's thread counts, instead of the model's one-thread curve. "" = none.
	OperatorStore string `yaml:"operator_store"`
}

// DefaultCluster is one server with this machine's threads (CPU 0) and no GPU.
func DefaultCluster() Cluster { return Cluster{Servers: 1} }

// Threads returns CPU, or this machine's threads when CPU is 0.
func (c Cluster) Threads() int {
	if c.CPU == 0 {
		return runtime.NumCPU()
	}
	return c.CPU
}

func (c Cluster) validate() error {
	switch {
	case c.Servers < 1 || c.Servers > 10000:
		return fmt.Errorf("controller.cluster.servers: must be in [1, 10000], got %d", c.Servers)
	case c.CPU < 0 || c.CPU > 4096:
		return fmt.Errorf("controller.cluster.cpu: must be in [0, 4096] (0: this machine's threads), got %d", c.CPU)
	case c.GPU < 0 || c.GPU > 1600:
		return fmt.Errorf("controller.cluster.gpu: must be in [0, 1600], got %d", c.GPU)
	}
	return nil
}

// DefaultController returns the sloserve controller with the live defaults above.
func DefaultController() Controller {
	return Controller{Policy: ControllerSloserve, SampleInterval: DefaultControllerSample, Unit: DefaultControllerUnit,
		MinInstances: 1, MaxInstances: DefaultControllerMaxInstances, Cluster: DefaultCluster(),
		LeaderElection: DefaultLeaderElection(), Peers: DefaultPeers()}
}

func validPolicy(p string) bool {
	_, _, ok := PolicyName(p)
	return ok
}

// Validate reports the first field that is out of range, naming it and its value.
func (c Controller) Validate() error {
	switch {
	case !validPolicy(c.Policy):
		return fmt.Errorf("controller.policy: must be one of %v, got %q", ControllerPolicies(), c.Policy)
	case c.SampleInterval <= 0:
		return fmt.Errorf("controller.sample_interval: must be > 0, got %v", c.SampleInterval)
	case c.Unit < c.SampleInterval || c.Unit%c.SampleInterval != 0:
		return fmt.Errorf("controller.unit: must be a positive multiple of sample_interval %v, got %v", c.SampleInterval, c.Unit)
	case c.MinInstances < 0:
		return fmt.Errorf("controller.min_instances: must be ≥ 0, got %d", c.MinInstances)
	case c.MaxInstances < max(c.MinInstances, 1) || c.MaxInstances > 1000:
		return fmt.Errorf("controller.max_instances: must be in [max(min_instances, 1), 1000], got %d", c.MaxInstances)
	}
	if err := c.LeaderElection.validate(); err != nil {
		return err
	}
	if err := c.Peers.validate(); err != nil {
		return err
	}
	return c.Cluster.validate()
}

// InstanceType describes the instances a model's workers run as, for the controller and cost.
type InstanceType struct {
	// Name is the type's name (the local provider's workers are "local").
	Name string `yaml:"name"`
	// PricePerHour is the price of one instance, in USD/hour (for local workers a nominal price,
	// DefaultLocalPricePerHour).
	PricePerHour float64 `yaml:"price_per_hour"`
	// RPS is the sustained rate one instance serves within the SLO, in requests/s (MArk's μ*);
	// 0 means measure it with a quick profile of the model when the first worker is ready.
	RPS float64 `yaml:"rps"`
	// LaunchDelay is the expected time from launch to ready (duration); MArk's launch overhead.
	LaunchDelay time.Duration `yaml:"launch_delay"`
	// MaxBatch bounds the batch one instance is sent (requests); 0 means MArk's batching rule
	// decides (§4.3) under controller mark, and no per-instance bound otherwise.
	MaxBatch int `yaml:"max_batch"`
}

// DefaultInstanceType returns a local worker at the nominal price, measured by a quick profile.
func DefaultInstanceType() InstanceType {
	return InstanceType{Name: "local", PricePerHour: DefaultLocalPricePerHour, LaunchDelay: DefaultLocalLaunchDelay}
}

func (t InstanceType) validate(p string) error {
	switch {
	case t.Name == "":
		return fmt.Errorf("%s.instance_type.name: must not be empty", p)
	case !(t.PricePerHour >= 0 && t.PricePerHour < 1e6):
		return fmt.Errorf("%s.instance_type.price_per_hour: must be in [0, 1e6), got %v", p, t.PricePerHour)
	case !(t.RPS >= 0 && t.RPS < 1e9):
		return fmt.Errorf("%s.instance_type.rps: must be in [0, 1e9), got %v", p, t.RPS)
	case t.LaunchDelay < 0:
		return fmt.Errorf("%s.instance_type.launch_delay: must be ≥ 0, got %v", p, t.LaunchDelay)
	case t.MaxBatch < 0 || t.MaxBatch > 1<<16:
		return fmt.Errorf("%s.instance_type.max_batch: must be in [0, 65536], got %d", p, t.MaxBatch)
	}
	return nil
}

// PlacesInstances reports whether the controller's policy places instances on
// controller.cluster's servers (its registration needs servers: INFless's), so that the provider
// must account for them.
func (c Controller) PlacesInstances() bool {
	port, name, _ := PolicyName(c.Policy)
	return needsServers(port, name)
}

// ConfiguredFleet reports whether the controller's policy keeps each model's configured instance
// count (its registration's CapsConfiguredFleet: none, fixed), so that it plans nothing.
func (c Controller) ConfiguredFleet() bool {
	port, name, _ := PolicyName(c.Policy)
	s, ok := policy.Lookup(port, name)
	return ok && s.Caps&policy.CapsConfiguredFleet != 0
}
