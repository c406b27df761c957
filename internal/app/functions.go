package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sloserve/sloserve/internal/analytic"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/keepalive"
	"github.com/sloserve/sloserve/internal/provider/functions"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
	"github.com/sloserve/sloserve/internal/provider/local"
)

// The live function tier (serverless.enabled): one functions.Tier — worker processes
// (local.NewFunctionTier) or pods (kubernetes.NewFunctionTier, by provider.kind) — for every model whose controller policy has a serverless tier (sloserve's: BATCH's optimiser
// chose its memory and runs its buffer), behind the gateway's Bouncer (gateway.AddFunctionTier).
// Idle function instances are released by INFless's LSTH keep-alive on the controller's clock
// (keepalive.ScaledLSTHConfig(controller.unit)), as the sloserve policy releases idle VMs.

// startFunctions starts the function tier and adds it to the gateway for every model with a
// serverless tier; nil without serverless.enabled.
func startFunctions(cfg config.Config, opts StackOptions, g *gateway.Gateway, models []controller.Model, log *slog.Logger) (*functions.Tier, error) {
	if !cfg.Serverless.Enabled {
		return nil, nil
	}
	ft, err := newFunctionTier(cfg, opts, log.With("tier", "serverless"))
	if err != nil {
		return nil, fmt.Errorf("serverless: %w", err)
	}
	inv := gateway.InvokerFunc(func(ctx context.Context, model string, mem int, call func(context.Context, string) error) error {
		_, err := ft.Invoke(ctx, model, mem, call)
		return err
	})
	n := 0
	for _, m := range models {
		sl := m.Serverless
		if sl == nil || sl.Batching == nil {
			continue
		}
		if err := g.AddFunctionTier(m.Name, gateway.FunctionTier{Invoker: inv, MemoryMB: sl.MemoryMB, Policy: sl.Batching,
			Concurrency: cfg.Serverless.Instances(), Route: m.Route}); err != nil {
			ft.Close()
			return nil, fmt.Errorf("serverless: %w", err)
		}
		// One instance warm from the start (LSTH's pre-warm of a model about to be invoked):
		// the burst's first spills find it, later ones cold-start the rest.
		pctx, cancel := context.WithTimeout(context.Background(), functionStartTimeout(cfg))
		err := ft.Prewarm(pctx, m.Name, sl.MemoryMB)
		cancel()
		if err != nil {
			ft.Close()
			return nil, fmt.Errorf("serverless: %w", err)
		}
		n++
		log.Info("function tier", "model", m.Name, "memory_mb", sl.MemoryMB, "cpu", ft.Enforcement(), "max_instances", cfg.Serverless.Instances())
	}
	if n == 0 {
		ft.Close()
		return nil, fmt.Errorf("serverless.enabled: controller.policy %q has no serverless tier (sloserve has)", cfg.Controller.Policy)
	}
	return ft, nil
}

// newFunctionTier makes the provider's function tier: worker processes, or pods in
// provider.kubernetes' namespace. Idle instances are released by LSTH on the controller's unit.
func newFunctionTier(cfg config.Config, opts StackOptions, log *slog.Logger) (*functions.Tier, error) {
	unit := cfg.Controller.Unit
	ka := func() keepalive.Policy {
		l, err := keepalive.NewLSTH(keepalive.ScaledLSTHConfig(unit))
		if err != nil { // unit is validated > 0
			return &keepalive.Fixed{KeepAlive: 10 * unit}
		}
		return l
	}
	tier := cost.DefaultCatalog().Serverless
	if cfg.Provider.Kind != config.ProviderKubernetes {
		return local.NewFunctionTier(local.FunctionConfig{Worker: localConfig(cfg, opts), Tier: tier,
			MaxInstances: cfg.Serverless.Instances(), RunGap: unit, KeepAlive: ka}, log)
	}
	client, err := kubeClient(cfg, opts)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewFunctionTier(client, kubernetes.FunctionConfig{Pods: KubernetesConfig(cfg.Provider.Kubernetes), Tier: tier,
		MaxInstances: cfg.Serverless.Instances(), RunGap: unit, KeepAlive: ka, StartTimeout: functionStartTimeout(cfg)}, log)
}

// functionStartTimeout bounds a function instance's cold start: the provider's start timeout.
func functionStartTimeout(cfg config.Config) time.Duration {
	if cfg.Provider.Kind == config.ProviderKubernetes {
		return cfg.Provider.Kubernetes.StartTimeout
	}
	return cfg.Workers.StartTimeout
}

// planner is the function tier's buffer when it is BATCH's (sloserve's deadline-guarded buffer).
type planner interface {
	Plans() []analytic.PlanChange
}

// FunctionPlans returns the (memory, B, T) plans BATCH's online optimiser put in force on a
// model's function tier, each with its reason; nil without one.
func (s *Stack) FunctionPlans(model string) []analytic.PlanChange {
	var out []analytic.PlanChange
	done := make(chan struct{})
	if !s.Gateway.FunctionControl(model, func(time.Time) {
		defer close(done)
		if p, ok := s.functionPolicy(model).(planner); ok {
			out = p.Plans()
		}
	}) {
		return nil
	}
	<-done
	return out
}

// functionPolicy is a model's function-tier buffer policy.
func (s *Stack) functionPolicy(model string) any {
	if s.fnPolicies == nil {
		return nil
	}
	return s.fnPolicies[model]
}

// logPlans logs each new plan of every model's function tier with the optimiser's reason, once
// per period until ctx ends.
func (s *Stack) logPlans(ctx context.Context, period time.Duration) {
	seen := map[string]int{}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for model := range s.fnPolicies {
			plans := s.FunctionPlans(model)
			for _, p := range plans[min(seen[model], len(plans)):] {
				s.log.Info("batch plan", "model", model, "memory_mb", p.Plan.MemoryMB, "B", p.Plan.MaxBatch, "T", p.Plan.Timeout,
					"cost_per_request", p.Plan.CostPerRequest, "reason", p.Plan.Reason)
			}
			seen[model] = len(plans)
		}
	}
}

// fnPoliciesOf maps each model with a serverless tier to its buffer policy.
func fnPoliciesOf(models []controller.Model) map[string]any {
	out := map[string]any{}
	for _, m := range models {
		if m.Serverless != nil && m.Serverless.Batching != nil {
			out[m.Name] = m.Serverless.Batching
		}
	}
	return out
}
