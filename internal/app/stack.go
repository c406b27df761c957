package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/controller/facts"
	"github.com/sloserve/sloserve/internal/controller/leader"
	"github.com/sloserve/sloserve/internal/dashboard"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/functions"
	"github.com/sloserve/sloserve/internal/provider/kubernetes"
	"github.com/sloserve/sloserve/internal/telemetry"
)

// StackOptions are the dependencies of Start; nil fields get safe defaults.
type StackOptions struct {
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
	// Registry receives and serves (/metrics) the gateway's metrics; nil means a new registry.
	Registry *prometheus.Registry
	// Policies builds each model's batching policy; nil means batching.Builtin().
	Policies batching.Registry
	// Env is added to the local workers' environment.
	Env []string
	// KubernetesClient is the API client of the kubernetes provider (provider.kind kubernetes);
	// nil means a client from provider.kubernetes.kubeconfig ($KUBECONFIG, else in-cluster).
	// Tests inject a fake clientset.
	KubernetesClient clientset.Interface
	// Backend sends batches to the instances and fetches their metadata; nil means the OIP v2
	// REST client (NewOIPBackend).
	Backend gateway.Backend
	// DashboardToken, when not empty, is the bearer token /ui/data requires.
	DashboardToken string
	// Build is the binary's version: exported as sloserve_build_info (internal/gateway/metrics/runtime.go) and
	// reported by GET /v2 and gRPC ServerMetadata (Build.Version; "" means "(devel)").
	Build gateway.BuildInfo
	// Tracing propagates the clients' W3C trace context to the workers (and records spans when
	// it exports); nil propagates nothing.
	Tracing *telemetry.Tracing
	// Attach, when not empty, are running instances (e.g. the workers another gateway replica
	// launched) this gateway serves instead of launching its own: the provider is static
	// (ErrStaticFleet) and the configuration must have gone through AttachConfig.
	Attach []provider.Instance
}

// Stack is a running gateway with its fleet (local worker processes or Kubernetes pods) and its
// HTTP server: what `sloserve serve` and `sloserve demo` run.
type Stack struct {
	// Gateway is the running gateway.
	Gateway *gateway.Gateway
	// Provider runs the instances: a *local.Provider (provider.kind local; type-assert it for
	// local-only features such as PID) or a *kubernetes.Provider.
	Provider provider.Provider
	// URL is the gateway's base URL, e.g. "http://127.0.0.1:8080".
	URL string
	// GRPCAddr is the host:port of the OIP v2 gRPC endpoint, or "" when not served.
	GRPCAddr string
	// Registry holds the gateway's metrics.
	Registry *prometheus.Registry
	// Controller sizes each model's fleet (cfg.Controller.Policy) and accounts its cost.
	Controller *controller.Controller
	// Dashboard is the page served at /ui.
	Dashboard *dashboard.Dashboard
	// Repository serves cfg.ModelRepository's models; nil without one.
	Repository *gateway.Repository
	// Elector campaigns for the controller's Lease (controller.leader_election); nil when this
	// process always controls. Identity is this replica's name in the Lease and in its facts.
	Elector  *leader.Elector
	Identity string
	// Fleet sums the replicas' counters for this replica's controller when it leads
	// (controller.peers); nil without peers.
	Fleet *facts.Gatherer
	// Functions is the function tier (serverless.enabled): its cold starts, invocations and
	// per-invocation bill per model (Stats); nil without one.
	Functions *functions.Tier

	front  *gateway.Front
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger
	reload chan struct{} // Reload's requests to rescan the repository
	// fnPolicies are the function tiers' buffer policies by model (owned by their batchers).
	fnPolicies map[string]any
	stage      string // the workers' --model-dir of repository versions; "" without one
}

// Start builds the provider cfg.Provider.Kind names (local worker processes, or pods through
// the kubernetes provider), launches each model's instances of its instance_type (counting the
// ones already running, e.g. pods a previous serve left), waits until each model has its
// instances ready, and serves the gateway on cfg.Gateway.Addr. The gateway follows the
// provider's instances (restarts, removals) every cfg.Gateway.SyncInterval until Close.
func Start(ctx context.Context, cfg config.Config, opts StackOptions) (*Stack, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if err := gateway.RegisterRuntimeMetrics(reg, opts.Build); err != nil {
		return nil, err
	}
	pols := opts.Policies
	if pols == nil {
		pols = batching.Builtin()
	}
	stage, err := stageRepository(&cfg)
	if err != nil {
		return nil, err
	}
	if opts.Backend == nil && opts.Tracing != nil {
		opts.Backend = gateway.NewOIPBackend(oip.ClientOptions{HTTPClient: &http.Client{Transport: opts.Tracing.Transport(oip.NewTransport())}})
	}
	if opts.KubernetesClient, err = kubeClient(cfg, opts); err != nil {
		removeStage(stage)
		return nil, err
	}
	prov, err := newProvider(ctx, cfg, opts, log)
	if err != nil {
		removeStage(stage)
		return nil, err
	}
	g, err := gateway.New(gateway.Options{Logger: log, Registerer: reg, BackendTimeout: cfg.Gateway.BackendTimeout, Dispatch: cfg.Gateway.Dispatch,
		Backend: opts.Backend, Version: opts.Build.Version, ReadyAfterSync: true})
	if err != nil {
		closeProvider(prov)
		return nil, err
	}
	s := &Stack{Gateway: g, Provider: prov, Registry: reg, log: log, stage: stage, reload: make(chan struct{}, 1)}
	fail := func(err error) (*Stack, error) {
		g.Close(context.Background())
		if s.Functions != nil {
			s.Functions.Close()
		}
		closeProvider(prov)
		removeStage(stage)
		return nil, err
	}
	for _, m := range cfg.Models {
		pol, err := pols.New(m.Batching)
		if err != nil {
			return fail(fmt.Errorf("model %s: %w", m.Name, err))
		}
		if err := g.AddModel(gateway.Model{Name: m.Name, SLO: m.SLO.Spec(), Policy: pol, QueueLimit: m.QueueLimit, Slots: m.Slots,
			MaxRows: m.MaxRows, MaxBatchBytes: m.MaxBatchBytes}); err != nil {
			return fail(err)
		}
	}
	if err := gateway.AddEnsembles(g, cfg); err != nil {
		return fail(err)
	}
	reps, err := newReplicas(cfg, opts.KubernetesClient, g, log)
	if err != nil {
		return fail(err)
	}
	s.Elector, s.Identity, s.Fleet = reps.elector, reps.identity, reps.gather
	if kp, ok := prov.(*kubernetes.Provider); ok && reps.elector != nil {
		kp.SetActive(reps.elector.IsLeader) // interrupted pods are replaced by the leader alone
	}
	// With leader election the leader's controller keeps each model's fleet: a replica never
	// launches on its own (three replicas starting at once would launch three fleets).
	if !cfg.Controller.LeaderElection.Enabled {
		if err := launchFleet(ctx, cfg, prov, log); err != nil {
			return fail(err)
		}
	}
	insts, _ := prov.Instances(ctx)
	if err := g.Sync(ctx, insts); err != nil {
		if !cfg.Controller.LeaderElection.Enabled {
			return fail(fmt.Errorf("start workers: %w", err))
		}
		// The leader's pods may be up before their workers listen (a replica starting next to
		// a new fleet): the periodic sync adds them, and readiness waits for a clean sync.
		log.Warn("start workers: first sync incomplete; retrying every sync interval", "err", err)
	}
	if stage != "" {
		s.Repository, err = gateway.NewRepository(g, gateway.RepositoryOptions{Dir: cfg.ModelRepository, Stage: stage, Provider: prov,
			StartTimeout: cfg.Workers.StartTimeout, Policies: pols, Logger: log})
		if err != nil {
			return fail(err)
		}
		if err := s.Repository.Step(ctx, false); err != nil {
			log.Warn("model repository: some models are not served", "err", err)
		}
	}
	ctl, cms, err := newController(ctx, cfg, g, prov, insts, reps, log)
	if err != nil {
		return fail(err)
	}
	s.Controller = ctl
	if s.Functions, err = startFunctions(cfg, opts, g, cms, log); err != nil {
		return fail(err)
	}
	if s.Functions != nil {
		s.fnPolicies = fnPoliciesOf(cms)
		fns := s.Functions
		ctl.SetServerlessCost(func(model string) float64 { return fns.Stats(model).CostUSD })
	}
	h, err := g.Handler(gateway.HandlerOptions{Gatherer: reg, AdminToken: cfg.Gateway.AdminToken, OIP: oip.HandlerOptions{
		Limits: gateway.OIPLimits(cfg.Gateway.MaxBodyBytes), RetryAfter: cfg.Gateway.RetryAfter}})
	if err != nil {
		return fail(err)
	}
	if h, s.Dashboard, err = mount(h, cfg, g, reg, ctl, cmp.Or(opts.DashboardToken, cfg.Gateway.AdminToken), reps.local(g), log); err != nil {
		return fail(err)
	}
	instances := 0
	for _, m := range cfg.Models {
		instances += m.Instances
	}
	s.front, err = gateway.Listen(g, h, gateway.FrontOptions{Config: cfg.Gateway, Instances: instances, Registerer: reg,
		Logger: log, Tracing: opts.Tracing})
	if err != nil {
		return fail(err)
	}
	s.URL, s.GRPCAddr = s.front.URL, s.front.GRPCAddr
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.front.Serve()
	var poke <-chan struct{} // a ready instance is added at once, not at the next sync
	if rn, ok := prov.(provider.ReadyNotifier); ok {
		poke = rn.ReadyEvents()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		g.Watch(wctx, ctl, cfg.Gateway.SyncInterval, poke) // the controller's view: instances it drains stay out
	}()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		reps.run(wctx, ctl) // under the Lease with leader election
	}()
	go func() {
		defer s.wg.Done()
		s.Dashboard.Run(wctx)
	}()
	if s.Functions != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.logPlans(wctx, cfg.Controller.SampleInterval)
		}()
	}
	if s.Repository != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.Repository.Run(wctx, cfg.RepositoryPoll, s.reload)
		}()
	}
	log.Info("gateway listening", "url", s.URL, "models", g.ModelNames())
	return s, nil
}

// Close stops accepting connections, fails waiting requests, lets batches in flight finish
// (until ctx ends) and closes the provider: local workers are stopped; Kubernetes pods are left
// running (a restarted serve adopts them; deleting the namespace removes them). It returns the number of waiting requests failed.
func (s *Stack) Close(ctx context.Context) (int, error) {
	var errs []error
	if err := s.front.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	s.cancel()
	if s.Repository != nil {
		s.wg.Wait() // the repository's rescan ends before the gateway closes
		s.Repository.Close(ctx)
	}
	failed, err := s.Gateway.Close(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	s.wg.Wait()
	if s.Functions != nil {
		if err := s.Functions.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := closeProvider(s.Provider); err != nil {
		errs = append(errs, err)
	}
	removeStage(s.stage)
	return failed, errors.Join(errs...)
}

// Shutdown is a replica's graceful stop (SIGTERM): readiness fails at once (400, as OIP and Triton answer not ready)
// (Gateway.SetDraining), the listeners keep accepting for delay (gateway.shutdown_delay, for load
// balancers to take the replica out), then close; the requests already taken — being read,
// queued or in a batch — are finished while the batchers keep dispatching, and Close fails
// whatever is left when grace (gateway.shutdown_grace, counted from the call) has passed. It
// returns Close's results.
func (s *Stack) Shutdown(grace, delay time.Duration) (int, error) {
	start := time.Now()
	s.Gateway.SetDraining()
	s.log.Info("graceful shutdown", "grace", grace, "delay", delay)
	if delay > 0 {
		time.Sleep(min(delay, grace))
	}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(grace))
	defer cancel()
	failed, err := s.Close(ctx)
	s.log.Info("graceful shutdown done", "took", time.Since(start), "failed_waiting", failed)
	return failed, err
}

// Reload asks for a rescan of the model repository (SIGHUP): new models are loaded, changed
// ones reloaded, removed ones unloaded. It does not wait; without a repository it does nothing.
func (s *Stack) Reload() {
	select {
	case s.reload <- struct{}{}:
	default: // a rescan is already asked for
	}
}
