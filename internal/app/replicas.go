package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	clientset "k8s.io/client-go/kubernetes"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/controller/facts"
	"github.com/sloserve/sloserve/internal/controller/leader"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
)

// replicas is what a gateway needs to run as one of several replicas (docs/deployment.md): the
// Lease it campaigns for (nil: this process always controls) and the gatherer that sums its
// peers' counters for its controller (nil: its own counters only).
type replicas struct {
	identity string
	elector  *leader.Elector
	gather   *facts.Gatherer
}

// kubeClient returns opts.KubernetesClient, else a client from provider.kubernetes.kubeconfig,
// when the provider or the replicas need the API; nil otherwise.
func kubeClient(cfg config.Config, opts StackOptions) (clientset.Interface, error) {
	if opts.KubernetesClient != nil || cfg.Provider.Kind != config.ProviderKubernetes {
		return opts.KubernetesClient, nil
	}
	c, err := kubernetes.NewClient(cfg.Provider.Kubernetes.EffectiveKubeconfig())
	if err != nil {
		return nil, fmt.Errorf("provider.kubernetes: %w", err)
	}
	return c, nil
}

// newReplicas builds the elector and the gatherer cfg.Controller asks for.
func newReplicas(cfg config.Config, client clientset.Interface, g *gateway.Gateway, log *slog.Logger) (*replicas, error) {
	le, pc := cfg.Controller.LeaderElection, cfg.Controller.Peers
	r := &replicas{identity: le.EffectiveIdentity()}
	ns := cmp.Or(le.Namespace, cfg.Provider.Kubernetes.EffectiveNamespace())
	if le.Enabled {
		e, err := leader.New(leader.Config{Client: client, Namespace: ns, Name: le.LeaseName, Identity: r.identity,
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			Logger: log.With("component", "leader")})
		if err != nil {
			return nil, fmt.Errorf("controller.leader_election: %w", err)
		}
		r.elector = e
	}
	var peers []facts.Peers
	if len(pc.Static) > 0 {
		peers = append(peers, facts.Static(pc.Static))
	}
	if pc.Service != "" {
		peers = append(peers, facts.EndpointSlices{Client: client, Namespace: ns, Service: pc.Service, Port: pc.Port})
	}
	if len(peers) > 0 {
		r.gather = facts.NewGatherer(r.identity, r.local(g), facts.Join(peers...),
			facts.GathererOptions{Client: &http.Client{}, Token: cfg.Gateway.AdminToken, Timeout: pc.Timeout})
	}
	return r, nil
}

// local returns this replica's facts: its identity, whether it leads, every model's counters.
func (r *replicas) local(g *gateway.Gateway) facts.Local {
	return func() (facts.Report, error) {
		rep := facts.Report{Identity: r.identity, Leader: r.leads(), Models: map[string]facts.Counters{}}
		for _, m := range g.ModelNames() {
			c, err := g.Counters(m)
			if err != nil {
				continue // unloaded meanwhile
			}
			rep.Models[m] = facts.Counters{Arrivals: c.Arrivals, Completed: c.Completed, Missed: c.Missed,
				InSystemNS: int64(c.InSystem), Queued: c.Queued}
			if r.gather != nil && rep.Leader {
				if rep.Fleet == nil {
					rep.Fleet = map[string]facts.Counters{}
				}
				rep.Fleet[m] = r.gather.Reading(m)
			}
		}
		return rep, nil
	}
}

// leads reports whether this replica runs the controller: always without leader election.
func (r *replicas) leads() bool { return r.elector == nil || r.elector.IsLeader() }

// reader is the controller's Reader: the fleet's counters when peers are gathered, else the
// gateway's own.
func (r *replicas) reader(g *gateway.Gateway) controller.Reader {
	if r.gather == nil {
		return func(model string) (controller.Reading, error) {
			c, err := g.Counters(model)
			return controller.Reading{Arrivals: c.Arrivals, Completed: c.Completed, Missed: c.Missed, InSystem: c.InSystem, Queued: c.Queued}, err
		}
	}
	return func(model string) (controller.Reading, error) {
		c := r.gather.Reading(model)
		return controller.Reading{Arrivals: c.Arrivals, Completed: c.Completed, Missed: c.Missed,
			InSystem: time.Duration(c.InSystemNS), Queued: c.Queued}, nil
	}
}

// gatherFn is the controller's Options.Gather: nil without peers.
func (r *replicas) gatherFn() func(context.Context, time.Time) error {
	if r.gather == nil {
		return nil
	}
	return r.gather.Gather
}

// run runs the controller: under the Lease with leader election, else until ctx ends.
func (r *replicas) run(ctx context.Context, ctl *controller.Controller) {
	if r.elector == nil {
		_ = ctl.Run(ctx)
		return
	}
	_ = r.elector.Run(ctx, func(lctx context.Context) { _ = ctl.Run(lctx) })
}
