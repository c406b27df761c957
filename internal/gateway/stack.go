package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/controller"
	"github.com/sloserve/sloserve/internal/dashboard"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/oipgrpc"
	"github.com/sloserve/sloserve/internal/provider"
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
	Backend Backend
	// DashboardToken, when not empty, is the bearer token /ui/data requires.
	DashboardToken string
	// Build is the binary's version: exported as sloserve_build_info (metrics_runtime.go) and
	// reported by GET /v2 and gRPC ServerMetadata (Build.Version; "" means "(devel)").
	Build BuildInfo
	// Tracing propagates the clients' W3C trace context to the workers (and records spans when
	// it exports); nil propagates nothing.
	Tracing *telemetry.Tracing
}

// Stack is a running gateway with its fleet (local worker processes or Kubernetes pods) and its
// HTTP server: what `sloserve serve` and `sloserve demo` run.
type Stack struct {
	// Gateway is the running gateway.
	Gateway *Gateway
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
	Repository *Repository

	server *http.Server
	grpc   *grpc.Server
	admin  *telemetry.Admin
	cancel context.CancelFunc
	wg     sync.WaitGroup
	log    *slog.Logger
	reload chan struct{} // Reload's requests to rescan the repository
	stage  string        // the workers' --model-dir of repository versions; "" without one
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
	if err := RegisterRuntimeMetrics(reg, opts.Build); err != nil {
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
		opts.Backend = NewOIPBackend(oip.ClientOptions{HTTPClient: &http.Client{Transport: opts.Tracing.Transport(oip.NewTransport())}})
	}
	prov, err := newProvider(ctx, cfg, opts, log)
	if err != nil {
		removeStage(stage)
		return nil, err
	}
	g, err := New(Options{Logger: log, Registerer: reg, BackendTimeout: cfg.Gateway.BackendTimeout, Dispatch: cfg.Gateway.Dispatch,
		Backend: opts.Backend, Version: opts.Build.Version})
	if err != nil {
		closeProvider(prov)
		return nil, err
	}
	s := &Stack{Gateway: g, Provider: prov, Registry: reg, log: log, stage: stage, reload: make(chan struct{}, 1)}
	fail := func(err error) (*Stack, error) {
		g.Close(context.Background())
		closeProvider(prov)
		removeStage(stage)
		return nil, err
	}
	for _, m := range cfg.Models {
		pol, err := pols.New(m.Batching)
		if err != nil {
			return fail(fmt.Errorf("model %s: %w", m.Name, err))
		}
		if err := g.AddModel(Model{Name: m.Name, SLO: m.SLO.Spec(), Policy: pol, QueueLimit: m.QueueLimit, Slots: m.Slots,
			MaxRows: m.MaxRows, MaxBatchBytes: m.MaxBatchBytes}); err != nil {
			return fail(err)
		}
	}
	if err := addEnsembles(g, cfg); err != nil {
		return fail(err)
	}
	if err := launchFleet(ctx, cfg, prov, log); err != nil {
		return fail(err)
	}
	insts, _ := prov.Instances(ctx)
	if err := g.Sync(ctx, insts); err != nil {
		return fail(fmt.Errorf("start workers: %w", err))
	}
	if stage != "" {
		s.Repository, err = NewRepository(g, RepositoryOptions{Dir: cfg.ModelRepository, Stage: stage, Provider: prov,
			StartTimeout: cfg.Workers.StartTimeout, Policies: pols, Logger: log})
		if err != nil {
			return fail(err)
		}
		if err := s.Repository.Step(ctx, false); err != nil {
			log.Warn("model repository: some models are not served", "err", err)
		}
	}
	ctl, err := newController(ctx, cfg, g, prov, insts, log)
	if err != nil {
		return fail(err)
	}
	s.Controller = ctl
	h, err := g.Handler(HandlerOptions{Gatherer: reg, AdminToken: cfg.Gateway.AdminToken, OIP: oip.HandlerOptions{
		Limits: oipLimits(cfg.Gateway.MaxBodyBytes), RetryAfter: cfg.Gateway.RetryAfter}})
	if err != nil {
		return fail(err)
	}
	if h, s.Dashboard, err = mount(h, cfg, g, reg, ctl, cmp.Or(opts.DashboardToken, cfg.Gateway.AdminToken), log); err != nil {
		return fail(err)
	}
	bodies := newBodyBudget(cfg.Gateway.MaxInflightBodyBytes)
	h = g.guardBodies(h, bodies, cfg.Gateway.MaxBodyBytes, cfg.Gateway.RetryAfter)
	gc := cfg.Gateway
	instances := 0
	for _, m := range cfg.Models {
		instances += m.Instances
	}
	maxConns, lowered := sizeConnBudget(gc.MaxConnections, fileLimit(), instances)
	if lowered {
		log.Warn("gateway.max_connections lowered to fit the open-files limit (ulimit -n) less the descriptors kept for workers and files",
			"max_connections", gc.MaxConnections, "budget", maxConns, "open_files_limit", fileLimit())
	}
	conns := newConnBudget(maxConns, gc.MaxConnectionsPerClient, connProbeReserve)
	if err := registerConnMetrics(reg, conns); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", gc.Addr)
	if err != nil {
		return fail(fmt.Errorf("gateway.addr %s: %w", gc.Addr, err))
	}
	var gln net.Listener
	if gc.GRPCAddr != "" {
		gopts := []grpc.ServerOption{
			grpc.MaxConcurrentStreams(uint32(gc.GRPCMaxConcurrentStreams)),
			grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: gc.IdleTimeout,
				MaxConnectionAge: gc.GRPCMaxConnectionAge, MaxConnectionAgeGrace: gc.WriteTimeout}),
			grpc.StatsHandler(grpcConnStats{conns}), // (grpc-go shares write buffers by default: an idle connection holds none)
			// Request ids, trace context and the access log, as telemetry.Middleware on REST.
			grpc.ChainUnaryInterceptor(telemetry.UnaryServerInterceptor(telemetry.AccessLogOptions{Logger: log,
				SampleRatio: gc.AccessLogSample, Tracing: opts.Tracing})),
		}
		if gc.TLSCert != "" { // the REST endpoint's certificate serves gRPC too
			creds, cerr := grpcTLS(gc.TLSCert, gc.TLSKey)
			if cerr != nil {
				ln.Close()
				return fail(cerr)
			}
			gopts = append(gopts, grpc.Creds(creds))
		}
		// Reflection and health let grpcurl, grpc_health_probe and Kubernetes gRPC probes work
		// without the .proto file (docs/protocols.md).
		s.grpc, err = oipgrpc.NewServer(g, oipgrpc.Options{Limits: oipLimits(gc.MaxBodyBytes), RetryAfter: gc.RetryAfter, Observe: g.observe,
			BodyBudget: bodies, Reflection: true, Health: true, ServerOptions: gopts})
		if err == nil {
			gln, err = net.Listen("tcp", gc.GRPCAddr)
		}
		if err != nil {
			ln.Close()
			return fail(fmt.Errorf("gateway.grpc_addr %s: %w", gc.GRPCAddr, err))
		}
		s.GRPCAddr = gln.Addr().String()
		gln = conns.listen(gln, false, true)
	}
	h = telemetry.Middleware(h, telemetry.AccessLogOptions{Logger: log, SampleRatio: gc.AccessLogSample, Route: routeOf,
		Tracing: opts.Tracing})
	if gc.AdminAddr != "" {
		if s.admin, err = telemetry.StartAdmin(gc.AdminAddr, log); err != nil {
			ln.Close()
			if gln != nil {
				gln.Close()
			}
			return fail(fmt.Errorf("gateway.admin_addr: %w", err))
		}
		log.Info("admin server (pprof) listening", "url", "http://"+s.admin.Addr+"/debug/pprof/")
	}
	s.server = NewServer(probeGate(h, gc.RetryAfter), ServerOptions{ReadHeaderTimeout: gc.ReadHeaderTimeout, ReadTimeout: gc.ReadTimeout,
		WriteTimeout: gc.WriteTimeout, IdleTimeout: gc.IdleTimeout, MaxHeaderBytes: gc.MaxHeaderBytes})
	s.server.ConnState = conns.connState
	s.server.ConnContext = connContext
	s.URL = "http://" + ln.Addr().String()
	if gc.TLSCert != "" {
		if err := useTLS(s.server, gc.TLSCert, gc.TLSKey); err != nil {
			ln.Close()
			if gln != nil {
				gln.Close()
			}
			return fail(err)
		}
		s.URL = "https://" + ln.Addr().String()
	}
	warnExposed(log, gc)
	if gc.TLSCert == "" {
		warnExposedGRPC(log, gc.GRPCAddr)
	}
	ln = conns.listen(ln, true, false)
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		serve := s.server.Serve
		if s.server.TLSConfig != nil {
			serve = func(ln net.Listener) error { return s.server.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("gateway server failed", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		g.Watch(wctx, ctl, gc.SyncInterval) // the controller's view: instances it drains stay out
	}()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		ctl.Run(wctx)
	}()
	go func() {
		defer s.wg.Done()
		s.Dashboard.Run(wctx)
	}()
	if s.Repository != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.Repository.Run(wctx, cfg.RepositoryPoll, s.reload)
		}()
	}
	if s.grpc != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.grpc.Serve(gln); err != nil {
				log.Error("gateway gRPC server failed", "err", err)
			}
		}()
	}
	log.Info("gateway listening", "url", s.URL, "models", g.ModelNames())
	return s, nil
}

func oipLimits(maxBody int64) oip.Limits {
	l := oip.DefaultLimits()
	if maxBody > 0 {
		l.MaxBodyBytes = maxBody
	}
	return l
}

// Close stops accepting connections, fails waiting requests, lets batches in flight finish
// (until ctx ends) and closes the provider: local workers are stopped; Kubernetes pods are left
// running (a restarted serve adopts them; deleting the namespace removes them). It returns the number of waiting requests failed.
func (s *Stack) Close(ctx context.Context) (int, error) {
	var errs []error
	if s.grpc != nil {
		stopped := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			s.grpc.Stop()
		}
	}
	s.admin.Close()
	if err := s.server.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shut down gateway server: %w", err))
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
	if err := closeProvider(s.Provider); err != nil {
		errs = append(errs, err)
	}
	removeStage(s.stage)
	return failed, errors.Join(errs...)
}

// Reload asks for a rescan of the model repository (SIGHUP): new models are loaded, changed
// ones reloaded, removed ones unloaded. It does not wait; without a repository it does nothing.
func (s *Stack) Reload() {
	select {
	case s.reload <- struct{}{}:
	default: // a rescan is already asked for
	}
}
