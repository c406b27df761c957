package kubernetes

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/provider"
)

// Worker environment variables: the instance's identity and batching config, for workers and
// sidecars that want them (the gateway reads the annotations).
const (
	EnvModel    = "SLOSERVE_MODEL"
	EnvType     = "SLOSERVE_INSTANCE_TYPE"
	EnvTier     = "SLOSERVE_TIER"
	EnvMaxBatch = "SLOSERVE_MAX_BATCH"
	EnvMaxWait  = "SLOSERVE_MAX_WAIT"
)

// The worker's one writable path: an emptyDir at /tmp (the root filesystem is read-only).
const (
	tmpVolume    = "tmp"
	tmpSizeLimit = "64Mi"
)

// Selector is the label selector of the pods the provider manages.
func Selector() string { return LabelManagedBy + "=" + ManagedBy }

// podName returns a DNS-1123 name "sloserve-<model>-<suffix>" of at most 63 characters.
func podName(model, suffix string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(model) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(r)
		dash = false
	}
	m := strings.Trim(b.String(), "-")
	if len(m) > 40 {
		m = strings.TrimRight(m[:40], "-")
	}
	if m == "" {
		m = "model"
	}
	return "sloserve-" + m + "-" + suffix
}

// labelValue returns v when it is a valid label value, else a sanitized one.
func labelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	out := []byte(v)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			out[i] = '_'
		}
	}
	s := string(out)
	if len(s) > validation.LabelValueMaxLength {
		s = s[:validation.LabelValueMaxLength]
	}
	return strings.Trim(s, "-_.")
}

// buildPod returns the pod of one instance. avoid lists nodes marked for interruption that the
// pod must not be scheduled on.
func (c *Config) buildPod(name string, spec provider.Spec, res Resources, launched time.Time, avoid []string, extra map[string]string) *corev1.Pod {
	base, spot := cost.ParseType(spec.Type)
	capacity := CapacityOnDemand
	selector := c.OnDemandNodeSelector
	var tolerations []corev1.Toleration
	if spot {
		capacity = CapacitySpot
		selector = c.SpotNodeSelector
		tolerations = append(tolerations, c.SpotTolerations...)
	}
	tier := spec.Tier
	if tier == "" {
		tier = provider.TierVM
	}
	labels := map[string]string{
		LabelManagedBy: ManagedBy,
		LabelComponent: "worker",
		LabelModel:     labelValue(spec.Model),
		LabelType:      labelValue(base),
		LabelCapacity:  capacity,
		LabelTier:      labelValue(string(tier)),
	}
	ann := map[string]string{
		AnnotationModel:    spec.Model,
		AnnotationType:     spec.Type,
		AnnotationLaunched: launched.UTC().Format(time.RFC3339Nano),
	}
	env := []corev1.EnvVar{
		{Name: EnvModel, Value: spec.Model},
		{Name: EnvType, Value: spec.Type},
		{Name: EnvTier, Value: string(tier)},
	}
	if spec.MaxBatch > 0 {
		ann[AnnotationMaxBatch] = strconv.Itoa(spec.MaxBatch)
		env = append(env, corev1.EnvVar{Name: EnvMaxBatch, Value: strconv.Itoa(spec.MaxBatch)})
	}
	if spec.MaxWait > 0 {
		ann[AnnotationMaxWait] = spec.MaxWait.String()
		env = append(env, corev1.EnvVar{Name: EnvMaxWait, Value: spec.MaxWait.String()})
	}
	for k, v := range extra {
		ann[k] = v
	}

	rl := corev1.ResourceList{}
	if res.MilliCPU > 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(res.MilliCPU, resource.DecimalSI)
	}
	if res.MemoryMiB > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(res.MemoryMiB<<20, resource.BinarySI)
	}
	if res.GPUs > 0 {
		rl[GPUResource] = *resource.NewQuantity(res.GPUs, resource.DecimalSI)
		tolerations = append(tolerations, corev1.Toleration{
			Key: string(GPUResource), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		})
	}

	var affinity *corev1.Affinity
	if len(avoid) > 0 {
		avoid = slices.Sorted(slices.Values(avoid))
		affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{
						Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: avoid,
					}},
				}},
			},
		}}
	}

	args := []string{"--addr", fmt.Sprintf("0.0.0.0:%d", c.Port), "--models", spec.Model}
	if n := c.MaxInFlight[spec.Model]; n > 0 {
		args = append(args, "--max-in-flight", strconv.Itoa(n))
	}
	args = append(args, c.Args...)
	grace := int64(c.StopTimeout / time.Second)
	noToken, yes, no := false, true, false
	tmpSize := resource.MustParse(tmpSizeLimit)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   c.Namespace,
			Labels:      labels,
			Annotations: ann,
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            "worker",
				Image:           c.Image,
				ImagePullPolicy: c.ImagePullPolicy,
				Command:         slices.Clone(c.Command),
				Args:            args,
				Env:             env,
				Ports:           []corev1.ContainerPort{{Name: PortName, ContainerPort: int32(c.Port), Protocol: corev1.ProtocolTCP}},
				Resources:       corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()},
				// The root filesystem is read-only; /tmp is the one writable path (an emptyDir).
				VolumeMounts: []corev1.VolumeMount{{Name: tmpVolume, MountPath: "/tmp"}},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             &yes,
					ReadOnlyRootFilesystem:   &yes,
					AllowPrivilegeEscalation: &no,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/v2/health/ready", Port: intstr.FromString(PortName),
					}},
					PeriodSeconds: 1, FailureThreshold: 3,
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/v2/health/live", Port: intstr.FromString(PortName),
					}},
					PeriodSeconds: 5, FailureThreshold: 6,
				},
			}},
			Volumes: []corev1.Volume{{Name: tmpVolume, VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &tmpSize},
			}}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			NodeSelector:                  maps.Clone(selector),
			Tolerations:                   tolerations,
			Affinity:                      affinity,
			ServiceAccountName:            c.ServiceAccountName,
			AutomountServiceAccountToken:  &noToken,
			TerminationGracePeriodSeconds: &grace,
		},
	}
}

// IsManaged reports whether pod carries the provider's managed-by label and is a VM instance
// (function pods, IsFunction, belong to the function tier).
func IsManaged(pod *corev1.Pod) bool {
	return pod != nil && pod.Labels[LabelManagedBy] == ManagedBy && pod.Annotations[AnnotationModel] != "" && !IsFunction(pod)
}

// SpecFromPod reads the provider.Spec the pod was launched with from its annotations.
func SpecFromPod(pod *corev1.Pod) provider.Spec {
	s := provider.Spec{
		Model: pod.Annotations[AnnotationModel],
		Type:  pod.Annotations[AnnotationType],
		Tier:  provider.Tier(pod.Labels[LabelTier]),
	}
	if v, err := strconv.Atoi(pod.Annotations[AnnotationMaxBatch]); err == nil && v > 0 {
		s.MaxBatch = v
	}
	if v, err := time.ParseDuration(pod.Annotations[AnnotationMaxWait]); err == nil && v > 0 {
		s.MaxWait = v
	}
	return s
}

// podPort returns the worker container's PortName port, or 0.
func podPort(pod *corev1.Pod) int32 {
	for _, ct := range pod.Spec.Containers {
		for _, p := range ct.Ports {
			if p.Name == PortName {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// podReady returns whether the PodReady condition is True and since when.
func podReady(pod *corev1.Pod) (bool, time.Time) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// InstanceFromPod returns the instance a managed pod stands for. interrupted forces
// provider.StateInterrupted (the pod's node is marked for termination but the pod is not yet
// annotated). The state is, in order: draining once deletion started; terminated when the pod
// ended; interrupted when annotated (or forced); ready when Running, PodReady and addressed;
// launching otherwise.
func InstanceFromPod(pod *corev1.Pod, interrupted bool) provider.Instance {
	in := provider.Instance{ID: pod.Name, Spec: SpecFromPod(pod), State: provider.StateLaunching}
	if t, err := time.Parse(time.RFC3339Nano, pod.Annotations[AnnotationLaunched]); err == nil {
		in.Launched = t
	} else {
		in.Launched = pod.CreationTimestamp.Time
	}
	if port := podPort(pod); pod.Status.PodIP != "" && port > 0 {
		host := pod.Status.PodIP
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		in.Addr = fmt.Sprintf("http://%s:%d", host, port)
	}
	ready, since := podReady(pod)
	if ready {
		in.Ready = since
	}
	switch {
	case pod.DeletionTimestamp != nil:
		in.State = provider.StateDraining
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		in.State = provider.StateTerminated
	case interrupted || pod.Annotations[AnnotationInterrupted] != "":
		in.State = provider.StateInterrupted
	case pod.Status.Phase == corev1.PodRunning && ready && in.Addr != "":
		in.State = provider.StateReady
	}
	return in
}
