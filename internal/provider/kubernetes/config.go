package kubernetes

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sloserve/sloserve/internal/cost"
)

// Resources is what one instance of a type asks the scheduler for. Requests equal limits, so
// worker pods get the Guaranteed QoS class and the profiled service times hold.
type Resources struct {
	// MilliCPU is the CPU in thousandths of a core (1000 = one vCPU).
	MilliCPU int64
	// MemoryMiB is the memory in MiB.
	MemoryMiB int64
	// GPUs is the number of whole GPUs, requested as GPUResource.
	GPUs int64
}

// ResourcesFromCatalog maps every VM and burstable type of cat to the resources of its vCPU,
// memory and GPU count.
func ResourcesFromCatalog(cat cost.Catalog) map[string]Resources {
	out := make(map[string]Resources, len(cat.Types))
	for _, t := range cat.Types {
		out[t.Name] = Resources{
			MilliCPU:  int64(t.VCPU) * 1000,
			MemoryMiB: int64(math.Round(t.MemoryGB * 1024)),
			GPUs:      int64(t.GPUs),
		}
	}
	return out
}

// GPUResource is the extended resource name of NVIDIA's device plugin.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// Label, annotation and taint keys the provider writes and reads.
const (
	// LabelManagedBy marks the pods this provider owns (value ManagedBy); the informers select on it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value.
	ManagedBy = "sloserve"
	// LabelComponent is "worker" on instance pods.
	LabelComponent = "app.kubernetes.io/component"
	// LabelModel, LabelType, LabelCapacity and LabelTier identify an instance's model, catalog
	// type (without the spot suffix), market (CapacitySpot or CapacityOnDemand) and tier. Label
	// values are sanitized; the exact values are in the annotations below.
	LabelModel    = "sloserve.io/model"
	LabelType     = "sloserve.io/instance-type"
	LabelCapacity = "sloserve.io/capacity-type"
	LabelTier     = "sloserve.io/tier"

	// AnnotationModel and AnnotationType hold the exact provider.Spec model and type names.
	AnnotationModel = "sloserve.io/model"
	AnnotationType  = "sloserve.io/instance-type"
	// AnnotationMaxBatch and AnnotationMaxWait hold the instance's own batching config (INFless
	// non-uniform batching): a decimal batch size and a Go duration.
	AnnotationMaxBatch = "sloserve.io/max-batch"
	AnnotationMaxWait  = "sloserve.io/max-wait"
	// AnnotationLaunched is when Launch was called (RFC 3339 with nanoseconds).
	AnnotationLaunched = "sloserve.io/launched"
	// AnnotationInterrupted is set (RFC 3339) when the pod's node was marked for interruption;
	// from then on the instance is provider.StateInterrupted.
	AnnotationInterrupted = "sloserve.io/interrupted"
	// AnnotationReplacement names the pod launched to replace an interrupted one;
	// AnnotationReplaces is its back-reference.
	AnnotationReplacement = "sloserve.io/replacement"
	AnnotationReplaces    = "sloserve.io/replaces"

	// CapacitySpot and CapacityOnDemand are LabelCapacity's values.
	CapacitySpot     = "spot"
	CapacityOnDemand = "on-demand"

	// PortName names the worker container's OIP v2 port.
	PortName = "oip"
)

// Defaults of Config.
const (
	DefaultNamespace = "sloserve"
	DefaultImage     = "sloserve:0.1.0"
	DefaultPort      = 8000
	// DefaultInterruptionTaint is the taint key that marks a node for termination. Cloud node
	// termination handlers set their own (AWS NTH: aws-node-termination-handler/spot-itn); set
	// Config.InterruptionTaints to match.
	DefaultInterruptionTaint = "sloserve.io/spot-interruption"
	// DefaultInterruptionCondition is a Node condition type that, when True, marks the node for
	// termination (as set by node-problem-detector style agents).
	DefaultInterruptionCondition corev1.NodeConditionType = "SpotInterruption"
	// DefaultSpotTaint is the taint key of spot nodes that spot pods tolerate.
	DefaultSpotTaint = "sloserve.io/spot"
	// DefaultResync is the period of the interruption loop when no event arrives.
	DefaultResync = time.Second
	// DefaultStopTimeout is the pods' termination grace period.
	DefaultStopTimeout = 10 * time.Second
)

// Config configures the kubernetes provider. Start from DefaultConfig.
type Config struct {
	// Namespace holds the instance pods; the provider needs rights only there (plus list/watch
	// on nodes when WatchNodes is set).
	Namespace string
	// Image is the worker container image.
	Image string
	// ImagePullPolicy is the worker container's pull policy; "" = the cluster default.
	ImagePullPolicy corev1.PullPolicy
	// Command is the worker entry point; the provider appends
	// `--addr 0.0.0.0:<Port> --models <model>`, then `--max-in-flight <n>` when MaxInFlight
	// names the model, and then Args.
	Command []string
	// Args are extra worker arguments (e.g. "--runtime", "native"); a --max-in-flight here
	// overrides MaxInFlight's (the worker's last flag wins).
	Args []string
	// MaxInFlight maps a model to the batches its worker runs at once before answering 429 —
	// the model's slots — so that gateway replicas sharing the worker never overload it
	// (internal/batcher/busy.go, docs/replicas.md). A model not in it runs without a limit.
	MaxInFlight map[string]int
	// Port is the worker's OIP v2 TCP port inside the pod.
	Port int
	// Types maps a catalog type name (without the "/spot" suffix) to its resources; Launch
	// refuses a type not in it.
	Types map[string]Resources
	// OnDemandNodeSelector and SpotNodeSelector pin pods to the on-demand and spot node pools.
	OnDemandNodeSelector map[string]string
	SpotNodeSelector     map[string]string
	// SpotTolerations are added to spot pods (spot pools are usually tainted).
	SpotTolerations []corev1.Toleration
	// ServiceAccountName runs the worker pods; "" = the namespace's default. Workers never get an
	// API token mounted.
	ServiceAccountName string
	// StopTimeout is the pods' termination grace period (whole seconds).
	StopTimeout time.Duration
	// WatchNodes turns on interruption handling (needs list/watch on nodes, a ClusterRole).
	WatchNodes bool
	// InterruptionTaints are taint keys (any effect) that mark a node for termination.
	InterruptionTaints []string
	// InterruptionConditions are Node condition types that mark a node for termination when True.
	InterruptionConditions []corev1.NodeConditionType
	// ReplaceInterrupted makes the provider launch a replacement with the same Spec, away from
	// interrupted nodes, as soon as the notice arrives; the interrupted pod is deleted (drained)
	// once its replacement is ready or InterruptionGrace has passed. Turn it off when the
	// controller's policy handles provider.StateInterrupted itself (MArk §4.5 standbys).
	ReplaceInterrupted bool
	// InterruptionGrace is how long an interrupted pod is kept at most (the cloud's notice, EC2:
	// 2 min, cost.SpotNotice).
	InterruptionGrace time.Duration
	// Resync is the period of the interruption loop when no event arrives.
	Resync time.Duration
}

// DefaultConfig returns the defaults: namespace "sloserve", image "sloserve:0.1.0", port 8000,
// resources of cost.DefaultCatalog's types, spot pools by label sloserve.io/capacity-type, the
// DefaultInterruptionTaint and DefaultInterruptionCondition, replacement on, EC2's 2-minute notice.
func DefaultConfig() Config {
	return Config{
		Namespace:            DefaultNamespace,
		Image:                DefaultImage,
		Command:              []string{"sloserve", "worker"},
		Port:                 DefaultPort,
		Types:                ResourcesFromCatalog(cost.DefaultCatalog()),
		OnDemandNodeSelector: map[string]string{LabelCapacity: CapacityOnDemand},
		SpotNodeSelector:     map[string]string{LabelCapacity: CapacitySpot},
		SpotTolerations: []corev1.Toleration{{
			Key: DefaultSpotTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		}},
		StopTimeout:            DefaultStopTimeout,
		WatchNodes:             true,
		InterruptionTaints:     []string{DefaultInterruptionTaint},
		InterruptionConditions: []corev1.NodeConditionType{DefaultInterruptionCondition},
		ReplaceInterrupted:     true,
		InterruptionGrace:      cost.SpotNotice,
		Resync:                 DefaultResync,
	}
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace: %q: %s", c.Namespace, errs[0])
	}
	switch {
	case c.Image == "":
		return fmt.Errorf("image: must not be empty")
	case len(c.Command) == 0:
		return fmt.Errorf("command: must not be empty")
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("port: must be in [1, 65535], got %d", c.Port)
	case len(c.Types) == 0:
		return fmt.Errorf("types: must name at least one instance type")
	case c.StopTimeout < 0:
		return fmt.Errorf("stop_timeout: must be ≥ 0, got %v", c.StopTimeout)
	case c.InterruptionGrace < 0:
		return fmt.Errorf("interruption_grace: must be ≥ 0, got %v", c.InterruptionGrace)
	case c.Resync <= 0:
		return fmt.Errorf("resync: must be > 0, got %v", c.Resync)
	case c.WatchNodes && len(c.InterruptionTaints) == 0 && len(c.InterruptionConditions) == 0:
		return fmt.Errorf("interruption_taints: watching nodes needs a taint or a condition to watch")
	}
	for name, r := range c.Types {
		if r.MilliCPU < 0 || r.MemoryMiB < 0 || r.GPUs < 0 {
			return fmt.Errorf("types[%s]: resources must be ≥ 0, got %+v", name, r)
		}
	}
	for _, sel := range []struct {
		name string
		m    map[string]string
	}{{"on_demand_node_selector", c.OnDemandNodeSelector}, {"spot_node_selector", c.SpotNodeSelector}} {
		for k, v := range sel.m {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return fmt.Errorf("%s: key %q: %s", sel.name, k, errs[0])
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				return fmt.Errorf("%s[%s]: value %q: %s", sel.name, k, v, errs[0])
			}
		}
	}
	return nil
}
