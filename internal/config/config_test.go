package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
)

func TestLoadExample(t *testing.T) {
	c, err := Load("../../examples/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Models) != 2 {
		t.Fatalf("models (-want +got): -2 +%d", len(c.Models))
	}
	m := c.Models[0]
	type view struct {
		Name                  string
		Threshold             time.Duration
		Policy                string
		MaxBatch, Limit, Inst int
		BatchSLO              time.Duration
		DecMult               float64
	}
	got := view{m.Name, m.SLO.Spec().Threshold, m.Batching.Policy, m.Batching.MaxBatch, m.Batching.MLProxy.MaxBatchLimit, m.Instances, m.Batching.SLO, m.Batching.MLProxy.DecMult}
	want := view{"mlp256", 200 * time.Millisecond, batching.PolicyMLProxy, 8, 64, 1, 200 * time.Millisecond, batching.DefaultDecMult}
	if got != want {
		t.Errorf("models[0] (-want +got):\n- %+v\n+ %+v", want, got)
	}
	l := c.Models[1]
	if l.Batching.SLO != 100*time.Millisecond || l.Batching.MaxWait != 10*time.Millisecond || l.Slots != DefaultSlots || l.QueueLimit != DefaultQueueLimit {
		t.Errorf("models[1] = %+v: want batching.slo 100ms from slo.threshold_ms, max_wait 10ms, default slots and queue limit", l)
	}
	if it := c.Models[0].InstanceType; it != (InstanceType{Name: "local", PricePerHour: DefaultLocalPricePerHour, LaunchDelay: 2 * time.Second}) {
		t.Errorf("models[0].instance_type = %+v", it)
	}
	if it := c.Models[1].InstanceType; it != DefaultInstanceType() {
		t.Errorf("models[1].instance_type (-want +got):\n- %+v\n+ %+v", DefaultInstanceType(), it)
	}
	if !reflect.DeepEqual(c.Controller, DefaultController()) {
		t.Errorf("controller (-want +got):\n- %+v\n+ %+v", DefaultController(), c.Controller)
	}
	if c.Gateway.IdleTimeout != 120*time.Second || c.Workers.StopTimeout != 5*time.Second {
		t.Errorf("omitted fields did not keep defaults: %+v %+v", c.Gateway, c.Workers)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top-level field", "gatewy: {}\nmodels: [{name: a}]", "field gatewy not found"},
		{"unknown model field", "models: [{name: a, instancez: 2}]", "models[0]: yaml: unmarshal errors:\n  line 1: field instancez not found"},
		{"unknown batching field", "models: [{name: a, batching: {policy: fixed, windo: 1}}]", "field windo not found"},
		{"no models", "gateway: {addr: '127.0.0.1:1'}", "models: at least one model is required"},
		{"repository poll zero", "model_repository: /r\nmodel_repository_poll: 0s", "model_repository_poll: must be > 0, got 0s"},
		{"repository on kubernetes", "model_repository: /r\nprovider: {kind: kubernetes}", `model_repository: needs provider.kind local (its workers read the files), got "kubernetes"`},
		{"repository with --model-dir", "model_repository: /r\nworkers: {args: [--model-dir=/m]}", "model_repository: workers.args must not set --model-dir"},
		{"bad addr", "gateway: {addr: nope}\nmodels: [{name: a}]", `gateway.addr: "nope" is not host:port`},
		{"bad grpc addr", "gateway: {grpc_addr: nope}\nmodels: [{name: a}]", `gateway.grpc_addr: "nope" is not host:port`},
		{"negative timeout", "gateway: {write_timeout: -1s}\nmodels: [{name: a}]", "gateway.write_timeout: must be > 0, got -1s"},
		{"bad duration", "gateway: {write_timeout: soon}\nmodels: [{name: a}]", "cannot unmarshal"},
		{"empty name", "models: [{slots: 1}]", "models[0].name: must not be empty"},
		{"duplicate", "models: [{name: a}, {name: a}]", `models[1].name: "a" appears twice`},
		{"zero threshold", "models: [{name: a, slo: {threshold_ms: 0}}]", "models[0].slo.threshold_ms: must be > 0, got 0"},
		{"target above 1", "models: [{name: a, slo: {target: 1.5}}]", "models[0].slo.target: must be in (0, 1], got 1.5"},
		{"zero slots", "models: [{name: a, slots: 0}]", "models[0].slots: must be ≥ 1, got 0"},
		{"bad policy field", "models: [{name: a, batching: {max_batch: 0}}]", "models[0].batching.max_batch: must be ≥ 1, got 0"},
		{"bad runtime", "workers: {runtime: gpu}\nmodels: [{name: a}]", `workers.runtime: must be native or onnxruntime, got "gpu"`},
		{"not yaml", "{{{", "parse config"},
		{"negative per-client connections", "gateway: {max_connections_per_client: -1}\nmodels: [{name: a}]", "gateway.max_connections_per_client: must be ≥ 0, got -1"},
		{"zero gRPC streams", "gateway: {grpc_max_concurrent_streams: 0}\nmodels: [{name: a}]", "gateway.grpc_max_concurrent_streams: must be ≥ 1, got 0"},
		{"zero gRPC age", "gateway: {grpc_max_connection_age: 0s}\nmodels: [{name: a}]", "gateway.grpc_max_connection_age: must be > 0, got 0s"},
		{"body budget below three bodies", "gateway: {max_body_bytes: 1000, max_inflight_body_bytes: 2999}\nmodels: [{name: a}]", "gateway.max_inflight_body_bytes: must be ≥ three times gateway.max_body_bytes (3000), got 2999"},
		{"bad dispatch", "gateway: {dispatch: random}\nmodels: [{name: a}]", `gateway.dispatch: "random" is not one of`},
		{"bad log format", "gateway: {log_format: xml}\nmodels: [{name: a}]", `gateway.log_format: must be text or json, got "xml"`},
		{"bad access log sample", "gateway: {access_log_sample: 2}\nmodels: [{name: a}]", `gateway.access_log_sample: must be in [0, 1], got 2`},
		{"admin addr not loopback", "gateway: {admin_addr: \"0.0.0.0:6060\"}\nmodels: [{name: a}]", `gateway.admin_addr: "0.0.0.0:6060": the admin (pprof) port must be on a loopback host`},
		{"bad otlp endpoint", "gateway: {otlp_endpoint: \"collector:4318\"}\nmodels: [{name: a}]", `gateway.otlp_endpoint: "collector:4318" is not an http(s)://host:port URL`},
		{"bad controller", "controller: {policy: magic}\nmodels: [{name: a}]", `controller.policy: must be one of [none target-tracking batch fixed`},
		{"cluster without servers", "controller: {policy: infless, cluster: {servers: 0}}\nmodels: [{name: a}]", "controller.cluster.servers: must be in [1, 10000], got 0"},
		{"infless on kubernetes", "controller: {policy: infless}\nprovider: {kind: kubernetes}\nmodels: [{name: a}]", "controller.policy: infless places instances on controller.cluster's servers, which only provider.kind local accounts for"},
		{"cluster gpu negative", "controller: {cluster: {gpu: -5}}\nmodels: [{name: a}]", "controller.cluster.gpu: must be in [0, 1600], got -5"},
		{"unknown controller field", "controller: {polcy: mark}\nmodels: [{name: a}]", "field polcy not found"},
		{"unit not multiple", "controller: {sample_interval: 2s, unit: 3s}\nmodels: [{name: a}]", "controller.unit: must be a positive multiple of sample_interval 2s, got 3s"},
		{"max below min", "controller: {min_instances: 3, max_instances: 2}\nmodels: [{name: a}]", "controller.max_instances: must be in [max(min_instances, 1), 1000], got 2"},
		{"negative rps", "models: [{name: a, instance_type: {rps: -1}}]", "models[0].instance_type.rps: must be in [0, 1e9), got -1"},
		{"negative price", "models: [{name: a, instance_type: {price_per_hour: -2}}]", "models[0].instance_type.price_per_hour: must be in [0, 1e6), got -2"},
		{"unknown instance_type field", "models: [{name: a, instance_type: {rsp: 1}}]", "field rsp not found"},
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

func TestDecodeRepositoryWithoutModels(t *testing.T) {
	c, err := Decode(strings.NewReader("model_repository: /r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelRepository != "/r" || c.RepositoryPoll != DefaultRepositoryPoll || len(c.Models) != 0 {
		t.Errorf("got model_repository %q, poll %v, %d models", c.ModelRepository, c.RepositoryPoll, len(c.Models))
	}
}

func TestDefaultModelValid(t *testing.T) {
	c := Default()
	c.Models = []Model{DefaultModel("mlp256")}
	if err := c.Validate(); err != nil {
		t.Errorf("Default + DefaultModel: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	b, err := os.ReadFile("../../examples/serve.yaml")
	if err == nil {
		f.Add(string(b))
	}
	f.Add("models: [{name: a}]")
	f.Add("gateway: {addr: ':0'}\nmodels: [{name: a, batching: {policy: none}}]")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Decode(strings.NewReader(s))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Decode returned a config that does not validate: %v", err)
		}
	})
}

func TestDecodeControllerPartial(t *testing.T) {
	c, err := Decode(strings.NewReader("controller: {policy: mark, unit: 10s}\nmodels: [{name: a, instance_type: {rps: 50}}]"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultController()
	want.Policy, want.Unit = ControllerMark, 10*time.Second
	if !reflect.DeepEqual(c.Controller, want) {
		t.Errorf("controller (-want +got):\n- %+v\n+ %+v", want, c.Controller)
	}
	wantT := DefaultInstanceType()
	wantT.RPS = 50
	if got := c.Models[0].InstanceType; got != wantT {
		t.Errorf("instance_type (-want +got):\n- %+v\n+ %+v", wantT, got)
	}
}

// TestLoadINFlessExample: examples/serve-infless.yaml decodes to the infless policy on two
// servers of four threads, with the defaults it does not set.
func TestLoadINFlessExample(t *testing.T) {
	c, err := Load("../../examples/serve-infless.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctl := c.Controller
	if ctl.Policy != ControllerINFless || ctl.Cluster != (Cluster{Servers: 2, CPU: 4}) || ctl.MinInstances != 0 || len(c.Models) != 2 {
		t.Errorf("controller %+v, %d models; want infless on 2 × 4 threads, min 0, 2 models", ctl, len(c.Models))
	}
	if c.Gateway.Dispatch != "weighted-least-outstanding" {
		t.Errorf("gateway.dispatch %q, want weighted-least-outstanding", c.Gateway.Dispatch)
	}
}

// TestDecodePolicies: policies.<name> is kept for the policy to decode (one schema with the
// simulator); an unknown policy name and a controller key that moved there are errors naming
// the field.
func TestDecodePolicies(t *testing.T) {
	c, err := Decode(strings.NewReader("controller: {policy: mark}\npolicies: {mark: {headroom: 1.5}}\nmodels: [{name: a}]"))
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Headroom float64 `yaml:"headroom"`
	}
	if err := c.Policies.Decoder("mark", nil)(&o); err != nil || o.Headroom != 1.5 {
		t.Fatalf("policies.mark decoded %+v, %v; want headroom 1.5", o, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"policies: {nosuch: {}}\nmodels: [{name: a}]", "policies.nosuch: unknown policy"},
		{"controller: {headroom: 1.2}\nmodels: [{name: a}]", "controller.headroom: moved to policies.<policy>.headroom"},
		{"controller: {cool_down: 3s}\nmodels: [{name: a}]", "controller.cool_down: moved to policies.<policy>"},
		{"controller: {policy: nosuch}\nmodels: [{name: a}]", "controller.policy: must be one of"},
	} {
		_, err := Decode(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	for _, p := range []string{"none", "target-tracking", "sloserve", "mark", "sagemaker", "knative", "fixed", "infless"} {
		if _, _, ok := PolicyName(p); !ok {
			t.Errorf("PolicyName(%q) not found", p)
		}
	}
}

// TestSLOThresholdDuration: slo.threshold is a duration, as in a sim config, and replaces
// threshold_ms.
func TestSLOThresholdDuration(t *testing.T) {
	c, err := Decode(strings.NewReader("models: [{name: a, slo: {threshold: 150ms, target: 0.95}}]"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Models[0].SLO.Spec(); got.Threshold != 150*time.Millisecond || got.Target != 0.95 || c.Models[0].Batching.SLO != 150*time.Millisecond {
		t.Fatalf("slo %+v, batching.slo %v; want 150 ms at 0.95 for both", got, c.Models[0].Batching.SLO)
	}
	if _, err := Decode(strings.NewReader("models: [{name: a, slo: {threshold: -1s}}]")); err == nil || !strings.Contains(err.Error(), "models[0].slo.threshold: must be > 0") {
		t.Fatalf("negative threshold: %v", err)
	}
}
