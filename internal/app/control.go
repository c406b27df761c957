package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/adapters"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/controller/facts"
	"github.com/sloserve/sloserve/internal/dashboard"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// quickProfileReps is how many round trips QuickProfile keeps the fastest of, per batch size.
const quickProfileReps = 5

// newController builds the stack's controller: one entry per model, with the scaler named by
// cfg.Controller.Policy planning on the model's instance type — μ* from instance_type.rps when
// configured, else from a quick profile of the model on its first ready instance.
func newController(ctx context.Context, cfg config.Config, g *gateway.Gateway, prov provider.Provider, insts []provider.Instance, reps *replicas, log *slog.Logger) (*controller.Controller, error) {
	var models []controller.Model
	for _, m := range cfg.Models {
		curve, err := modelCurve(ctx, cfg, m, g, insts)
		if err != nil {
			return nil, err
		}
		cm, err := controller.NewModel(cfg, m, curve, time.Now())
		if err != nil {
			return nil, err
		}
		models = append(models, cm)
	}
	return controller.New(prov, g, reps.reader(g), models, controller.Options{Period: cfg.Controller.SampleInterval, Logger: log,
		DrainTimeout: cfg.Gateway.BackendTimeout, Gather: reps.gatherFn()})
}

// modelCurve is the service-time curve the controller plans a model with.
func modelCurve(ctx context.Context, cfg config.Config, m config.Model, g *gateway.Gateway, insts []provider.Instance) (profile.Curve, error) {
	it := m.InstanceType
	if it.RPS > 0 {
		return controller.LocalCurve(it.RPS, m.Slots, it.MaxBatch)
	}
	if cfg.Controller.ConfiguredFleet() {
		return controller.LocalCurve(1, 1, 1) // a static fleet plans nothing
	}
	for _, in := range insts {
		if in.Spec.Model == m.Name && in.State == provider.StateReady {
			c, err := g.QuickProfile(ctx, m.Name, in.Addr, quickProfileReps)
			if err != nil {
				return profile.Curve{}, fmt.Errorf("models %s: instance_type.rps is 0 and %w", m.Name, err)
			}
			return c, nil
		}
	}
	return profile.Curve{}, fmt.Errorf("models %s: instance_type.rps is 0 and no ready instance to profile (instances: %d)", m.Name, m.Instances)
}

// mount serves, next to the gateway's OIP handler h: the dashboard at /ui (over the gateway's
// Source), the TF Serving / KServe V1 REST API at /v1/ and the SageMaker container contract at
// /ping and /invocations (docs/protocols.md, "Mounting"), whose default model is the first one.
func mount(h http.Handler, cfg config.Config, g *gateway.Gateway, reg prometheus.Gatherer, ctl ControlView, token string, local facts.Local, log *slog.Logger) (http.Handler, *dashboard.Dashboard, error) {
	specs := map[string]slo.Spec{}
	for _, m := range cfg.Models {
		specs[m.Name] = m.SLO.Spec()
	}
	src, err := NewSource(reg, ctl, func(model string) slo.Spec {
		if s, ok := specs[model]; ok {
			return s
		}
		return slo.DefaultSpec()
	})
	if err != nil {
		return nil, nil, err
	}
	d, err := dashboard.New(src, dashboard.Options{Token: token, Logger: log, Interval: cfg.Controller.SampleInterval})
	if err != nil {
		return nil, nil, err
	}
	ao := adapters.Options{Limits: gateway.OIPLimits(cfg.Gateway.MaxBodyBytes), RetryAfter: cfg.Gateway.RetryAfter}
	mux := http.NewServeMux()
	mux.Handle("/ui", d)
	mux.Handle("/ui/", d)
	mux.Handle("/v1/", adapters.NewV1Handler(g, ao))
	sm := adapters.NewSageMakerHandler(g, gateway.DefaultModel(cfg, g), ao)
	mux.Handle("GET /ping", sm)
	mux.Handle("POST /invocations", sm)
	mux.HandleFunc("/invocations", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", http.MethodPost)
		gateway.WriteGuardError(w, fmt.Errorf("%w: %s /invocations (allowed: POST)", oip.ErrMethodNotAllowed, r.Method), cfg.Gateway.RetryAfter)
	})
	mux.Handle(facts.Path, facts.Handler(local, cfg.Gateway.AdminToken)) // the leader gathers it (docs/deployment.md)
	mux.Handle("/", h)
	return oip.CleanPaths(mux), d, nil
}
