package config

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestDecodeProvider(t *testing.T) {
	const c5 = "models: [{name: a, instance_type: {name: c5.large}}]\n"
	tests := []struct {
		name, yaml string
		want       func(*Provider)
	}{
		{"omitted: local with kubernetes defaults", "models: [{name: a}]", func(*Provider) {}},
		{"kind only", "provider: {kind: kubernetes}\n" + c5, func(p *Provider) { p.Kind = ProviderKubernetes }},
		{"scalars", "provider:\n  kind: kubernetes\n  kubernetes: {namespace: prod, image: 'reg/sloserve:v2', image_pull_policy: Always, worker_port: 9000, " +
			"kubeconfig: /k, service_account: worker, start_timeout: 2m, stop_timeout: 3s, watch_nodes: false, replace_interrupted: false, interruption_grace: 30s}\n" + c5,
			func(p *Provider) {
				p.Kind = ProviderKubernetes
				k := &p.Kubernetes
				k.Namespace, k.Image, k.ImagePullPolicy, k.WorkerPort, k.Kubeconfig, k.ServiceAccount = "prod", "reg/sloserve:v2", "Always", 9000, "/k", "worker"
				k.StartTimeout, k.StopTimeout, k.WatchNodes, k.ReplaceInterrupted, k.InterruptionGrace = 2*time.Minute, 3*time.Second, false, false, 30*time.Second
			}},
		{"selectors replace the defaults, {} clears", "provider:\n  kind: kubernetes\n  kubernetes: {on_demand_node_selector: {}, spot_node_selector: {pool: cheap}}\n" + c5,
			func(p *Provider) {
				p.Kind = ProviderKubernetes
				p.Kubernetes.OnDemandNodeSelector, p.Kubernetes.SpotNodeSelector = Labels{}, Labels{"pool": "cheap"}
			}},
		{"lists replace the defaults", "provider:\n  kind: kubernetes\n  kubernetes: {command: [/bin/w, serve], args: [--runtime, native], " +
			"spot_tolerations: [{key: spot, operator: Equal, value: 'yes', effect: NoExecute}], interruption_taints: [a/b], interruption_conditions: []}\n" + c5,
			func(p *Provider) {
				p.Kind = ProviderKubernetes
				k := &p.Kubernetes
				k.Command, k.Args = []string{"/bin/w", "serve"}, []string{"--runtime", "native"}
				k.SpotTolerations = []Toleration{{Key: "spot", Operator: "Equal", Value: "yes", Effect: "NoExecute"}}
				k.InterruptionTaints, k.InterruptionConditions = []string{"a/b"}, []string{}
			}},
		{"own instance type", "provider:\n  kind: kubernetes\n  kubernetes: {types: {tiny: {milli_cpu: 250, memory_mib: 256}}}\nmodels: [{name: a, instance_type: {name: tiny/spot}}]",
			func(p *Provider) {
				p.Kind = ProviderKubernetes
				p.Kubernetes.Types = map[string]KubernetesResources{"tiny": {MilliCPU: 250, MemoryMiB: 256}}
			}},
		{"local keeps the kubernetes section; local types are fine", "provider: {kubernetes: {image: x}}\nmodels: [{name: a}]", func(p *Provider) { p.Kubernetes.Image = "x" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode(strings.NewReader(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultProvider()
			tc.want(&want)
			if !reflect.DeepEqual(c.Provider, want) {
				t.Errorf("provider (-want +got):\n- %+v\n+ %+v", want, c.Provider)
			}
		})
	}
}

func TestDecodeProviderErrors(t *testing.T) {
	const k8s = "provider:\n  kind: kubernetes\n  kubernetes: "
	const c5 = "\nmodels: [{name: a, instance_type: {name: c5.large}}]"
	tests := []struct {
		name, yaml, want string
	}{
		{"kubernetes section checked under local", "provider: {kubernetes: {worker_port: 0}}\nmodels: [{name: a}]", "provider.kubernetes.worker_port: must be in [1, 65535], got 0"},
		{"bad kind", "provider: {kind: nomad}\nmodels: [{name: a}]", `provider.kind: must be one of [local kubernetes], got "nomad"`},
		{"unknown provider field", "provider: {knd: local}\nmodels: [{name: a}]", "field knd not found"},
		{"unknown kubernetes field", k8s + "{imag: x}" + c5, "field imag not found"},
		{"unknown resources field", k8s + "{types: {t: {cpu: 1}}}" + c5, "field cpu not found"},
		{"local type under kubernetes", "provider: {kind: kubernetes}\nmodels: [{name: a}]", `models[0].instance_type.name: "local" is not an instance type`},
		{"unknown type", "provider: {kind: kubernetes}\nmodels: [{name: a, instance_type: {name: z9.huge/spot}}]", `models[0].instance_type.name: "z9.huge/spot" is not an instance type`},
		{"bad namespace", k8s + "{namespace: Prod_1}" + c5, `provider.kubernetes.namespace: "Prod_1"`},
		{"empty image", k8s + "{image: ''}" + c5, "provider.kubernetes.image: must not be empty"},
		{"bad pull policy", k8s + "{image_pull_policy: Sometimes}" + c5, `provider.kubernetes.image_pull_policy: must be Always, IfNotPresent, Never or empty, got "Sometimes"`},
		{"empty command", k8s + "{command: []}" + c5, "provider.kubernetes.command: must name the worker executable"},
		{"port 0", k8s + "{worker_port: 0}" + c5, "provider.kubernetes.worker_port: must be in [1, 65535], got 0"},
		{"port too big", k8s + "{worker_port: 70000}" + c5, "provider.kubernetes.worker_port: must be in [1, 65535], got 70000"},
		{"zero start timeout", k8s + "{start_timeout: 0s}" + c5, "provider.kubernetes.start_timeout: must be > 0, got 0s"},
		{"negative stop timeout", k8s + "{stop_timeout: -1s}" + c5, "provider.kubernetes.stop_timeout: must be ≥ 0, got -1s"},
		{"negative grace", k8s + "{interruption_grace: -1s}" + c5, "provider.kubernetes.interruption_grace: must be ≥ 0, got -1s"},
		{"nothing to watch", k8s + "{interruption_taints: [], interruption_conditions: []}" + c5, "provider.kubernetes.interruption_taints: watch_nodes needs a taint"},
		{"bad service account", k8s + "{service_account: 'A B'}" + c5, `provider.kubernetes.service_account: "A B"`},
		{"negative resources", k8s + "{types: {tiny: {milli_cpu: -1}}}" + c5, "provider.kubernetes.types[tiny]: milli_cpu, memory_mib and gpus must be ≥ 0, got -1, 0 and 0"},
		{"spot type name", k8s + "{types: {tiny/spot: {milli_cpu: 1}}}" + c5, `provider.kubernetes.types: "tiny/spot" is not a type name`},
		{"bad selector key", k8s + "{on_demand_node_selector: {'bad key': x}}" + c5, `provider.kubernetes.on_demand_node_selector: key "bad key"`},
		{"bad selector value", k8s + "{spot_node_selector: {pool: 'not ok!'}}" + c5, `provider.kubernetes.spot_node_selector[pool]: value "not ok!"`},
		{"bad toleration operator", k8s + "{spot_tolerations: [{key: a, operator: In}]}" + c5, `provider.kubernetes.spot_tolerations[0].operator: must be Exists or Equal, got "In"`},
		{"bad toleration effect", k8s + "{spot_tolerations: [{key: a, operator: Exists, effect: Never}]}" + c5, `provider.kubernetes.spot_tolerations[0].effect: must be NoSchedule`},
		{"exists with value", k8s + "{spot_tolerations: [{key: a, operator: Exists, value: b}]}" + c5, `provider.kubernetes.spot_tolerations[0].value: must be empty with operator Exists`},
		{"bad taint key", k8s + "{interruption_taints: ['no good']}" + c5, `provider.kubernetes.interruption_taints[0]: "no good"`},
		{"bad condition", k8s + "{interruption_conditions: ['']}" + c5, `provider.kubernetes.interruption_conditions[0]: "" is not a condition type`},
		{"bad duration", k8s + "{start_timeout: soon}" + c5, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode error (-want +got):\n- …%s…\n+ %v", tc.want, err)
			}
		})
	}
}

func TestApplyEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c := Default()
	if err := c.ApplyEnv(env(nil)); err != nil || c.Provider.Kind != ProviderLocal {
		t.Errorf("unset $%s: kind %q, err %v; want local, nil", EnvProvider, c.Provider.Kind, err)
	}
	if err := c.ApplyEnv(env(map[string]string{EnvProvider: "kubernetes"})); err != nil || c.Provider.Kind != ProviderKubernetes {
		t.Errorf("$%s=kubernetes: kind %q, err %v", EnvProvider, c.Provider.Kind, err)
	}
	err := c.ApplyEnv(env(map[string]string{EnvProvider: "k8s"}))
	if want := `provider.kind: $SLOSERVE_PROVIDER must be one of [local kubernetes], got "k8s"`; err == nil || err.Error() != want {
		t.Errorf("bad $%s (-want +got):\n- %s\n+ %v", EnvProvider, want, err)
	}
	if c.Provider.Kind != ProviderKubernetes {
		t.Errorf("a bad $%s changed kind to %q", EnvProvider, c.Provider.Kind)
	}
}

func TestEffectiveNamespace(t *testing.T) {
	file := func(s string, err error) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if p != InClusterNamespaceFile {
				t.Errorf("read %s, want %s", p, InClusterNamespaceFile)
			}
			return []byte(s), err
		}
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvPodNamespace {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name, set, env string
		file           func(string) ([]byte, error)
		want           string
	}{
		{"set wins", "prod", "pod-ns", file("sa-ns", nil), "prod"},
		{"POD_NAMESPACE", "", "pod-ns", file("sa-ns", nil), "pod-ns"},
		{"in-cluster file", "", "", file("sa-ns\n", nil), "sa-ns"},
		{"default", "", "", file("", fs.ErrNotExist), DefaultKubernetesNamespace},
		{"empty file", "", " ", file("", nil), DefaultKubernetesNamespace},
		{"read error", "", "", file("x", errors.New("denied")), DefaultKubernetesNamespace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := Kubernetes{Namespace: tc.set}
			if got := k.namespaceFrom(env(tc.env), tc.file); got != tc.want {
				t.Errorf("namespace (-want +got):\n- %s\n+ %s", tc.want, got)
			}
		})
	}
}

func TestHasType(t *testing.T) {
	k := Kubernetes{Types: map[string]KubernetesResources{"tiny": {}}}
	for name, want := range map[string]bool{"c5.large": true, "c5.large/spot": true, "p2.xlarge": true, "tiny": true, "tiny/spot": true, "local": false, "": false, "c5.large/spot/spot": false} {
		if got := k.HasType(name); got != want {
			t.Errorf("HasType(%q) (-want +got): -%v +%v", name, want, got)
		}
	}
}

// TestLoadKubernetesExample keeps examples/serve-kubernetes.yaml and the ConfigMap of
// deploy/kustomize valid.
func TestLoadKubernetesExample(t *testing.T) {
	c, err := Load("../../examples/serve-kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Provider.Kind != ProviderKubernetes || c.Models[0].InstanceType.Name != "c5.large" || c.Gateway.Addr != "0.0.0.0:8080" ||
		c.Provider.Kubernetes.Namespace != "" {
		t.Errorf("provider %q, models[0].instance_type %q, gateway.addr %q, namespace %q; want kubernetes, c5.large, 0.0.0.0:8080, \"\" ($POD_NAMESPACE)",
			c.Provider.Kind, c.Models[0].InstanceType.Name, c.Gateway.Addr, c.Provider.Kubernetes.Namespace)
	}
	if len(c.Provider.Kubernetes.OnDemandNodeSelector) != 0 {
		t.Errorf("on_demand_node_selector %v, want {} (any node)", c.Provider.Kubernetes.OnDemandNodeSelector)
	}
}

// TestKustomizeConfigMap checks that the ConfigMap of deploy/kustomize holds
// examples/serve-kubernetes.yaml (without the example's header comment) and that it decodes.
func TestKustomizeConfigMap(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/kustomize/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Kind string            `yaml:"kind"`
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	got, ok := cm.Data["serve.yaml"]
	if cm.Kind != "ConfigMap" || !ok {
		t.Fatalf("configmap.yaml: kind %q, data keys %v; want a ConfigMap with serve.yaml", cm.Kind, slices.Collect(maps.Keys(cm.Data)))
	}
	ex, err := os.ReadFile("../../examples/serve-kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(ex), "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	if want := strings.Join(lines, ""); got != want {
		t.Errorf("deploy/kustomize/configmap.yaml serve.yaml differs from examples/serve-kubernetes.yaml (below its header):\n%s\n---\n%s", got, want)
	}
	if _, err := Decode(strings.NewReader(got)); err != nil {
		t.Errorf("configmap serve.yaml: %v", err)
	}
}
