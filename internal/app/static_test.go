package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/provider"
)

func TestParseInstancesAndAttach(t *testing.T) {
	insts, err := ParseInstances("logreg=http://127.0.0.1:9001/, logreg=http://127.0.0.1:9002,mlp256=https://w:1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range insts {
		got = append(got, in.ID+" "+in.Spec.Model+" "+in.Addr+" "+string(in.State))
	}
	want := "logreg-1 logreg http://127.0.0.1:9001 ready|logreg-2 logreg http://127.0.0.1:9002 ready|mlp256-1 mlp256 https://w:1 ready"
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("instances (-want +got):\n-%s\n+%s", want, g)
	}
	cfg := config.Default()
	cfg.Models = []config.Model{config.DefaultModel("logreg"), config.DefaultModel("mlp256"), config.DefaultModel("cnn")}
	insts, err = AttachConfig(&cfg, insts)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Models) != 2 || cfg.Models[0].Instances != 2 || cfg.Models[1].Instances != 1 || cfg.Controller.Policy != config.ControllerNone {
		t.Errorf("attached config: %d models, instances %d/%d, controller %q; want logreg×2, mlp256×1, none",
			len(cfg.Models), cfg.Models[0].Instances, cfg.Models[1].Instances, cfg.Controller.Policy)
	}
	if insts[0].Spec.Type != cfg.Models[0].InstanceType.Name {
		t.Errorf("instance type %q, want the model's %q", insts[0].Spec.Type, cfg.Models[0].InstanceType.Name)
	}
	p := &staticProvider{insts: insts}
	if _, err := p.Launch(context.Background(), provider.Spec{Model: "logreg"}); !errors.Is(err, ErrStaticFleet) {
		t.Errorf("Launch on an attached fleet: %v, want ErrStaticFleet", err)
	}
	if _, err := AttachConfig(&cfg, []provider.Instance{{Spec: provider.Spec{Model: "nope"}}}); err == nil {
		t.Errorf("attaching a model that is not configured: no error")
	}
	for _, bad := range []string{"", "logreg", "=http://x:1", "logreg=ftp://x", "logreg=http://"} {
		if _, err := ParseInstances(bad); err == nil {
			t.Errorf("ParseInstances(%q): no error", bad)
		}
	}
}

func FuzzParseInstances(f *testing.F) {
	f.Add("logreg=http://127.0.0.1:9001,logreg=http://127.0.0.1:9002")
	f.Add("a=https://h:1/")
	f.Add(",=,")
	f.Fuzz(func(t *testing.T, s string) {
		insts, err := ParseInstances(s)
		if err != nil {
			return
		}
		for _, in := range insts {
			if in.Spec.Model == "" || in.ID == "" || !(strings.HasPrefix(in.Addr, "http://") || strings.HasPrefix(in.Addr, "https://")) {
				t.Fatalf("ParseInstances(%q) = %+v", s, in)
			}
		}
	})
}
