package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sloserve/sloserve/internal/cost"
)

// Provider kinds (Provider.Kind).
const (
	// ProviderLocal runs each instance as a `sloserve worker` process on this machine
	// (internal/provider/local), configured by the workers section.
	ProviderLocal = "local"
	// ProviderKubernetes runs each instance as a Pod (internal/provider/kubernetes), configured
	// by provider.kubernetes.
	ProviderKubernetes = "kubernetes"
)

// ProviderKinds lists the accepted Provider.Kind values.
func ProviderKinds() []string { return []string{ProviderLocal, ProviderKubernetes} }

// Environment variables the configuration honours (ApplyEnv, Kubernetes.EffectiveNamespace).
const (
	// EnvProvider, when set, overrides provider.kind (deploy/kustomize sets it to kubernetes).
	EnvProvider = "SLOSERVE_PROVIDER"
	// EnvPodNamespace is the pod's namespace from the downward API; it is the default of
	// provider.kubernetes.namespace.
	EnvPodNamespace = "POD_NAMESPACE"
	// EnvKubeconfig is the usual kubeconfig variable; it is the default of
	// provider.kubernetes.kubeconfig.
	EnvKubeconfig = "KUBECONFIG"
)

// InClusterNamespaceFile holds the namespace of the pod's ServiceAccount when running in a pod.
const InClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Kubernetes provider defaults. They equal internal/provider/kubernetes.DefaultConfig's (that
// package is not imported here, to keep client-go out of the config); TestKubernetesDefaults in
// internal/gateway checks that they agree.
const (
	// DefaultKubernetesNamespace is the namespace when neither the file, $POD_NAMESPACE nor the
	// in-cluster namespace file says.
	DefaultKubernetesNamespace = "sloserve"
	// DefaultKubernetesImage is the worker image (Dockerfile: docker build -t sloserve:0.1.0 .).
	DefaultKubernetesImage = "sloserve:0.1.0"
	// DefaultKubernetesWorkerPort is the workers' OIP v2 port inside their pods.
	DefaultKubernetesWorkerPort = 8000
	// DefaultKubernetesStartTimeout bounds serve's wait for the initial pods: scheduling and an
	// image pull take far longer than a local process start.
	DefaultKubernetesStartTimeout = 5 * time.Minute
	// DefaultKubernetesStopTimeout is the worker pods' termination grace period.
	DefaultKubernetesStopTimeout = 10 * time.Second
	// LabelCapacityType is the node label that tells the on-demand and the spot pools apart in
	// the default node selectors; its values are "on-demand" and "spot".
	LabelCapacityType = "sloserve.io/capacity-type"
	// DefaultSpotTaint is the taint key of spot nodes that spot pods tolerate by default.
	DefaultSpotTaint = "sloserve.io/spot"
	// DefaultInterruptionTaint marks a node for termination (set by a node termination handler).
	DefaultInterruptionTaint = "sloserve.io/spot-interruption"
	// DefaultInterruptionCondition is a Node condition type that marks a node for termination
	// when True.
	DefaultInterruptionCondition = "SpotInterruption"
)

// Provider selects and configures what runs the models' instances.
type Provider struct {
	// Kind is local (worker processes on this machine, configured by the workers section) or
	// kubernetes (one Pod per instance, configured by provider.kubernetes); $SLOSERVE_PROVIDER
	// overrides it when set.
	Kind string `yaml:"kind"`
	// Kubernetes configures the kubernetes provider (used when kind is kubernetes). Each model's
	// instance_type.name (optionally with the /spot suffix) must then be a type of the cost
	// catalog or of provider.kubernetes.types.
	Kubernetes Kubernetes `yaml:"kubernetes"`
}

// Kubernetes configures the kubernetes provider (internal/provider/kubernetes.Config).
type Kubernetes struct {
	// Namespace holds the worker pods; "" means $POD_NAMESPACE, else the in-cluster
	// ServiceAccount's namespace, else "sloserve".
	Namespace string `yaml:"namespace"`
	// Kubeconfig is the path of a kubeconfig file; "" means $KUBECONFIG when set, else the
	// in-cluster ServiceAccount (serve running in a pod).
	Kubeconfig string `yaml:"kubeconfig"`
	// Image is the worker container image.
	Image string `yaml:"image"`
	// ImagePullPolicy is the worker container's pull policy: Always, IfNotPresent, Never, or ""
	// for the cluster's default.
	ImagePullPolicy string `yaml:"image_pull_policy"`
	// Command is the worker container's entry point; the provider appends
	// `--addr 0.0.0.0:<worker_port> --models <model> --max-in-flight <the model's slots>` (no
	// limit for a model repository's models) and then args.
	Command []string `yaml:"command"`
	// Args are extra worker arguments (e.g. [--runtime, native]).
	Args []string `yaml:"args"`
	// WorkerPort is the workers' OIP v2 TCP port inside their pods (port).
	WorkerPort int `yaml:"worker_port"`
	// ServiceAccount runs the worker pods; "" means the namespace's default. Workers never get an
	// API token mounted.
	ServiceAccount string `yaml:"service_account"`
	// StartTimeout bounds serve's wait until each model's initial pods are ready (duration).
	StartTimeout time.Duration `yaml:"start_timeout"`
	// StopTimeout is the worker pods' termination grace period (duration, whole seconds).
	StopTimeout time.Duration `yaml:"stop_timeout"`
	// Types adds instance types to (or overrides the resources of) the cost catalog's: name →
	// {milli_cpu, memory_mib, gpus} (millicores, MiB, whole GPUs). A pod requests (and is
	// limited to) its type's resources (Guaranteed QoS); a catalog type's are its vCPUs, memory
	// and GPUs.
	Types map[string]KubernetesResources `yaml:"types"`
	// OnDemandNodeSelector pins on-demand pods to their node pool (label → value; {} = any
	// node). Default: sloserve.io/capacity-type: on-demand.
	OnDemandNodeSelector Labels `yaml:"on_demand_node_selector"`
	// SpotNodeSelector pins pods of <type>/spot instances to the spot pool (label → value; {} =
	// any node). Default: sloserve.io/capacity-type: spot.
	SpotNodeSelector Labels `yaml:"spot_node_selector"`
	// SpotTolerations are added to spot pods (spot pools are usually tainted). Default: tolerate
	// sloserve.io/spot (Exists, NoSchedule).
	SpotTolerations []Toleration `yaml:"spot_tolerations"`
	// WatchNodes turns on spot interruption handling: the provider watches nodes for
	// interruption_taints and interruption_conditions (needs list/watch on nodes, the
	// ClusterRole of deploy/kustomize/rbac.yaml).
	WatchNodes bool `yaml:"watch_nodes"`
	// InterruptionTaints are taint keys (any effect) that mark a node for termination; point
	// them at what your node termination handler sets (AWS NTH: aws-node-termination-handler/spot-itn).
	InterruptionTaints []string `yaml:"interruption_taints"`
	// InterruptionConditions are Node condition types that mark a node for termination when True.
	InterruptionConditions []string `yaml:"interruption_conditions"`
	// ReplaceInterrupted launches a replacement of an interrupted pod at once, away from
	// interrupted nodes (docs/kubernetes.md, Spot interruptions).
	ReplaceInterrupted bool `yaml:"replace_interrupted"`
	// InterruptionGrace is how long an interrupted pod is kept at most (duration; EC2's notice
	// is 2 minutes).
	InterruptionGrace time.Duration `yaml:"interruption_grace"`
}

// KubernetesResources is what one instance of a type asks the scheduler for.
type KubernetesResources struct {
	// MilliCPU is the CPU in thousandths of a core (millicores; 1000 = one vCPU).
	MilliCPU int64 `yaml:"milli_cpu"`
	// MemoryMiB is the memory (MiB).
	MemoryMiB int64 `yaml:"memory_mib"`
	// GPUs is the number of whole GPUs (nvidia.com/gpu).
	GPUs int64 `yaml:"gpus"`
}

// Toleration is a Pod toleration (corev1.Toleration).
type Toleration struct {
	// Key is the taint key tolerated; "" with operator Exists tolerates every taint.
	Key string `yaml:"key"`
	// Operator is Exists or Equal.
	Operator string `yaml:"operator"`
	// Value is the taint value an Equal toleration matches.
	Value string `yaml:"value"`
	// Effect is the taint effect tolerated: NoSchedule, PreferNoSchedule, NoExecute, or "" for all.
	Effect string `yaml:"effect"`
}

// Labels is a label selector (label → value). Unlike a plain map, a Labels value in the file
// replaces the default as a whole, so {} clears it.
type Labels map[string]string

// UnmarshalYAML implements yaml.Unmarshaler: the mapping replaces the current value.
func (l *Labels) UnmarshalYAML(n *yaml.Node) error {
	var m map[string]string
	if err := n.Decode(&m); err != nil {
		return err
	}
	if m == nil {
		m = map[string]string{}
	}
	*l = m
	return nil
}

// DefaultProvider returns the local provider with the kubernetes provider's defaults filled in.
func DefaultProvider() Provider {
	return Provider{Kind: ProviderLocal, Kubernetes: DefaultKubernetes()}
}

// DefaultKubernetes returns the kubernetes provider's defaults: the namespace from the
// environment, image sloserve:0.1.0, worker port 8000, pods pinned to the pools labelled
// sloserve.io/capacity-type, interruption handling on with a replacement per interrupted pod and
// EC2's 2-minute notice.
func DefaultKubernetes() Kubernetes {
	return Kubernetes{
		Image:                  DefaultKubernetesImage,
		Command:                []string{"sloserve", "worker"},
		WorkerPort:             DefaultKubernetesWorkerPort,
		StartTimeout:           DefaultKubernetesStartTimeout,
		StopTimeout:            DefaultKubernetesStopTimeout,
		OnDemandNodeSelector:   Labels{LabelCapacityType: "on-demand"},
		SpotNodeSelector:       Labels{LabelCapacityType: "spot"},
		SpotTolerations:        []Toleration{{Key: DefaultSpotTaint, Operator: "Exists", Effect: "NoSchedule"}},
		WatchNodes:             true,
		InterruptionTaints:     []string{DefaultInterruptionTaint},
		InterruptionConditions: []string{DefaultInterruptionCondition},
		ReplaceInterrupted:     true,
		InterruptionGrace:      cost.SpotNotice,
	}
}

// ApplyEnv applies the environment overrides of `sloserve serve`: $SLOSERVE_PROVIDER, when set,
// replaces provider.kind. getenv is os.Getenv in the command.
func (c *Config) ApplyEnv(getenv func(string) string) error {
	if v := getenv(EnvProvider); v != "" {
		if !slices.Contains(ProviderKinds(), v) {
			return fmt.Errorf("provider.kind: $%s must be one of %v, got %q", EnvProvider, ProviderKinds(), v)
		}
		c.Provider.Kind = v
	}
	return nil
}

// EffectiveNamespace returns the namespace the pods go to: namespace when set, else
// $POD_NAMESPACE, else the in-cluster ServiceAccount's namespace, else "sloserve".
func (k Kubernetes) EffectiveNamespace() string {
	return k.namespaceFrom(os.Getenv, os.ReadFile)
}

func (k Kubernetes) namespaceFrom(getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if k.Namespace != "" {
		return k.Namespace
	}
	if ns := strings.TrimSpace(getenv(EnvPodNamespace)); ns != "" {
		return ns
	}
	if b, err := readFile(InClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return DefaultKubernetesNamespace
}

// EffectiveKubeconfig returns the kubeconfig path: kubeconfig when set, else $KUBECONFIG
// ("" = in-cluster).
func (k Kubernetes) EffectiveKubeconfig() string {
	if k.Kubeconfig != "" {
		return k.Kubeconfig
	}
	return os.Getenv(EnvKubeconfig)
}

// HasType reports whether a pod can be sized for the instance type name (with or without the
// /spot suffix): it is a type of the cost catalog or of types.
func (k Kubernetes) HasType(name string) bool {
	base, _ := cost.ParseType(name)
	if _, ok := k.Types[base]; ok {
		return true
	}
	cat := cost.DefaultCatalog()
	_, ok := cat.Type(base)
	return ok
}

// validate reports the first field of the provider section that is out of range (the
// kubernetes section too when kind is local, so that $SLOSERVE_PROVIDER cannot switch to a bad
// one); with kind kubernetes it also checks that every model's instance type is one a pod can be
// sized for.
func (p Provider) validate(models []Model) error {
	if !slices.Contains(ProviderKinds(), p.Kind) {
		return fmt.Errorf("provider.kind: must be one of %v, got %q", ProviderKinds(), p.Kind)
	}
	k := p.Kubernetes
	const pre = "provider.kubernetes."
	if k.Namespace != "" {
		if errs := validation.IsDNS1123Label(k.Namespace); len(errs) > 0 {
			return fmt.Errorf(pre+"namespace: %q: %s", k.Namespace, errs[0])
		}
	}
	switch {
	case k.Image == "":
		return fmt.Errorf(pre + "image: must not be empty")
	case !slices.Contains([]string{"", "Always", "IfNotPresent", "Never"}, k.ImagePullPolicy):
		return fmt.Errorf(pre+"image_pull_policy: must be Always, IfNotPresent, Never or empty, got %q", k.ImagePullPolicy)
	case len(k.Command) == 0 || k.Command[0] == "":
		return fmt.Errorf(pre + "command: must name the worker executable")
	case k.WorkerPort < 1 || k.WorkerPort > 65535:
		return fmt.Errorf(pre+"worker_port: must be in [1, 65535], got %d", k.WorkerPort)
	case k.StartTimeout <= 0:
		return fmt.Errorf(pre+"start_timeout: must be > 0, got %v", k.StartTimeout)
	case k.StopTimeout < 0:
		return fmt.Errorf(pre+"stop_timeout: must be ≥ 0, got %v", k.StopTimeout)
	case k.InterruptionGrace < 0:
		return fmt.Errorf(pre+"interruption_grace: must be ≥ 0, got %v", k.InterruptionGrace)
	case k.WatchNodes && len(k.InterruptionTaints) == 0 && len(k.InterruptionConditions) == 0:
		return fmt.Errorf(pre + "interruption_taints: watch_nodes needs a taint or a condition (interruption_conditions) to watch")
	}
	if k.ServiceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(k.ServiceAccount); len(errs) > 0 {
			return fmt.Errorf(pre+"service_account: %q: %s", k.ServiceAccount, errs[0])
		}
	}
	for _, n := range slices.Sorted(maps.Keys(k.Types)) {
		r := k.Types[n]
		switch {
		case n == "" || strings.Contains(n, cost.SpotSuffix):
			return fmt.Errorf(pre+"types: %q is not a type name (no %s suffix: the market is chosen per launch)", n, cost.SpotSuffix)
		case r.MilliCPU < 0 || r.MemoryMiB < 0 || r.GPUs < 0:
			return fmt.Errorf(pre+"types[%s]: milli_cpu, memory_mib and gpus must be ≥ 0, got %d, %d and %d", n, r.MilliCPU, r.MemoryMiB, r.GPUs)
		}
	}
	for _, sel := range []struct {
		name string
		m    Labels
	}{{"on_demand_node_selector", k.OnDemandNodeSelector}, {"spot_node_selector", k.SpotNodeSelector}} {
		for _, key := range slices.Sorted(maps.Keys(sel.m)) {
			if errs := validation.IsQualifiedName(key); len(errs) > 0 {
				return fmt.Errorf(pre+"%s: key %q: %s", sel.name, key, errs[0])
			}
			if errs := validation.IsValidLabelValue(sel.m[key]); len(errs) > 0 {
				return fmt.Errorf(pre+"%s[%s]: value %q: %s", sel.name, key, sel.m[key], errs[0])
			}
		}
	}
	for i, t := range k.SpotTolerations {
		f := fmt.Sprintf(pre+"spot_tolerations[%d].", i)
		switch {
		case t.Operator != "Exists" && t.Operator != "Equal":
			return fmt.Errorf("%soperator: must be Exists or Equal, got %q", f, t.Operator)
		case t.Operator == "Exists" && t.Value != "":
			return fmt.Errorf("%svalue: must be empty with operator Exists, got %q", f, t.Value)
		case t.Key == "" && t.Operator != "Exists":
			return fmt.Errorf("%skey: an empty key needs operator Exists", f)
		case !slices.Contains([]string{"", "NoSchedule", "PreferNoSchedule", "NoExecute"}, t.Effect):
			return fmt.Errorf("%seffect: must be NoSchedule, PreferNoSchedule, NoExecute or empty, got %q", f, t.Effect)
		}
		if t.Key != "" {
			if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
				return fmt.Errorf("%skey: %q: %s", f, t.Key, errs[0])
			}
		}
	}
	for i, key := range k.InterruptionTaints {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return fmt.Errorf(pre+"interruption_taints[%d]: %q: %s", i, key, errs[0])
		}
	}
	for i, c := range k.InterruptionConditions {
		if c == "" || strings.ContainsAny(c, " \t\r\n") {
			return fmt.Errorf(pre+"interruption_conditions[%d]: %q is not a condition type", i, c)
		}
	}
	if p.Kind != ProviderKubernetes {
		return nil
	}
	for i, m := range models {
		if !k.HasType(m.InstanceType.Name) {
			return fmt.Errorf("models[%d].instance_type.name: %q is not an instance type of the cost catalog or provider.kubernetes.types (the kubernetes provider sizes each pod by its type; e.g. c5.large or c5.large/spot)", i, m.InstanceType.Name)
		}
	}
	return nil
}
