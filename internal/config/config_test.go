package config

import (
	"os"
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
		{"bad dispatch", "gateway: {dispatch: random}\nmodels: [{name: a}]", `gateway.dispatch: "random" is not one of`},
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
