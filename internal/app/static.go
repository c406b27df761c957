package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/provider"
)

// A gateway replica that attaches to workers another process runs (`sloserve serve
// --instances`, issue #19) has a static provider: its instances are the listed ones, always
// ready, and it launches and terminates nothing. The replicas share the workers' slots through
// the workers' own concurrency limits (internal/batcher/busy.go); whoever runs the workers
// (replica 1's local provider, or the Kubernetes provider) owns their lifecycle.

// ErrStaticFleet is returned by the static provider's Launch and Terminate.
var ErrStaticFleet = errors.New("the fleet is attached (--instances): this gateway launches and terminates no instance")

// staticProvider is the provider of an attached fleet.
type staticProvider struct{ insts []provider.Instance }

var _ provider.Provider = (*staticProvider)(nil)

func (p *staticProvider) Launch(context.Context, provider.Spec) (provider.Instance, error) {
	return provider.Instance{}, ErrStaticFleet
}

func (p *staticProvider) Terminate(context.Context, string) error { return ErrStaticFleet }

func (p *staticProvider) Instances(context.Context) ([]provider.Instance, error) {
	return slices.Clone(p.insts), nil
}

// ParseInstances parses `--instances` values: comma-separated model=URL pairs, e.g.
// "logreg=http://127.0.0.1:9001,logreg=http://127.0.0.1:9002". Each becomes a ready instance of
// the model's VM tier with id "<model>-<n>" (n counts from 1 per model) and the URL as address.
func ParseInstances(s string) ([]provider.Instance, error) {
	var out []provider.Instance
	seen := map[string]int{}
	for part := range strings.SplitSeq(s, ",") {
		model, addr, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || model == "" {
			return nil, fmt.Errorf("%q is not model=URL", part)
		}
		u, err := url.Parse(addr)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%q: %q is not an http(s)://host:port URL", part, addr)
		}
		seen[model]++
		out = append(out, provider.Instance{ID: fmt.Sprintf("%s-%d", model, seen[model]), State: provider.StateReady,
			Spec: provider.Spec{Model: model, Tier: provider.TierVM}, Addr: strings.TrimSuffix(addr, "/")})
	}
	return out, nil
}

// AttachConfig makes cfg serve the attached instances: their models only (each must be
// configured; the others are dropped), as many instances each as listed, and the controller
// none (it scales nothing it cannot launch). It returns the instances with the type of their
// model's instance_type, for the provider.
func AttachConfig(cfg *config.Config, insts []provider.Instance) ([]provider.Instance, error) {
	count, types := map[string]int{}, map[string]string{}
	for _, in := range insts {
		count[in.Spec.Model]++
	}
	var models []config.Model
	for _, m := range cfg.Models {
		if n := count[m.Name]; n > 0 {
			m.Instances = n
			models = append(models, m)
			types[m.Name] = m.InstanceType.Name
			delete(count, m.Name)
		}
	}
	for name := range count {
		return nil, fmt.Errorf("model %q has instances but is not configured", name)
	}
	cfg.Models = models
	cfg.Controller.Policy = config.ControllerNone
	out := slices.Clone(insts)
	for i := range out {
		out[i].Spec.Type = types[out[i].Spec.Model]
	}
	return out, nil
}
