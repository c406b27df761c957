package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
}

// Stack is a running gateway with its fleet (local worker processes or Kubernetes pods) and its
// HTTP server: what `sloserve serve` and `sloserve demo` run.
type Stack struct {
	// Gateway is the running gateway.
	Gateway *Gateway
	// Provider runs the instances: a *local.Provider (provider.kind local; type-assert it for
	// local-only features such as PID) or a *kubernetes.Provider. Set once the fleet is up
	// (Start returned, or Wait returned nil).
	Provider provider.Provider
	// URL is the gateway's base URL, e.g. "http://127.0.0.1:8080".
	URL string
	// GRPCAddr is the host:port of the OIP v2 gRPC endpoint, or "" when not served. Its
	// connections are accepted once the fleet is up.
	GRPCAddr string
	// Registry holds the gateway's metrics.
	Registry *prometheus.Registry
	// Controller sizes each model's fleet (cfg.Controller.Policy) and accounts its cost. Set
	// once the fleet is up.
	Controller *controller.Controller
	// Dashboard is the page served at /ui. Set once the fleet is up.
	Dashboard *dashboard.Dashboard

	server  *http.Server
	grpc    *grpc.Server
	gln     net.Listener // the gRPC listener, served once the fleet is up
	handler atomic.Pointer[http.Handler]
	ready   chan struct{} // closed when bring-up ended; startErr says how
	// startErr is bring-up's error, written before ready is closed.
	startErr   error
	stopStart  context.CancelFunc // aborts bring-up (Close)
	grpcServed bool               // written before ready is closed
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	log        *slog.Logger
}

// Start builds the provider cfg.Provider.Kind names (local worker processes, or pods through
// the kubernetes provider), launches each model's instances of its instance_type (counting the
// ones already running, e.g. pods a previous serve left), waits until each model has its
// instances ready, and serves the gateway on cfg.Gateway.Addr. The gateway follows the
// provider's instances (restarts, removals) every cfg.Gateway.SyncInterval until Close.
//
// Start is Listen followed by Wait: it returns a Stack whose fleet is up, or an error (and
// nothing left running).
func Start(ctx context.Context, cfg config.Config, opts StackOptions) (*Stack, error) {
	s, err := Listen(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := s.Wait(ctx); err != nil {
		s.Close(context.Background())
		return nil, err
	}
	return s, nil
}

// Listen validates cfg, listens on cfg.Gateway.Addr (and GRPCAddr) and returns at once; the
// fleet is brought up in the background as Start describes. Until it is up the HTTP server
// answers /v2/health/live with 200, /v2/health/ready with 503 and every other request with 503
// and Retry-After, so a Kubernetes liveness probe passes while pods are pending and the
// readiness probe keeps the pod out of its Service. Ready is closed when bring-up ends; Wait
// says whether it succeeded. After a failed bring-up the server keeps answering as before it;
// the caller is expected to Close the Stack (sloserve serve exits).
func Listen(ctx context.Context, cfg config.Config, opts StackOptions) (*Stack, error) {
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
	pols := opts.Policies
	if pols == nil {
		pols = batching.Builtin()
	}
	g, err := New(Options{Logger: log, Registerer: reg, BackendTimeout: cfg.Gateway.BackendTimeout, Dispatch: cfg.Gateway.Dispatch,
		Backend: opts.Backend})
	if err != nil {
		return nil, err
	}
	s := &Stack{Gateway: g, Registry: reg, log: log, ready: make(chan struct{})}
	fail := func(err error) (*Stack, error) {
		g.Close(context.Background())
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
	bodies := newBodyBudget(cfg.Gateway.MaxInflightBodyBytes)
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
	if gc.GRPCAddr != "" {
		s.grpc, err = oipgrpc.NewServer(g, oipgrpc.Options{Limits: oipLimits(gc.MaxBodyBytes), RetryAfter: gc.RetryAfter, Observe: g.observe,
			BodyBudget: bodies, ServerOptions: []grpc.ServerOption{
				grpc.MaxConcurrentStreams(uint32(gc.GRPCMaxConcurrentStreams)),
				grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: gc.IdleTimeout,
					MaxConnectionAge: gc.GRPCMaxConnectionAge, MaxConnectionAgeGrace: gc.WriteTimeout}),
				grpc.StatsHandler(grpcConnStats{conns}), // (grpc-go shares write buffers by default: an idle connection holds none)
			}})
		if err == nil {
			s.gln, err = net.Listen("tcp", gc.GRPCAddr)
		}
		if err != nil {
			ln.Close()
			return fail(fmt.Errorf("gateway.grpc_addr %s: %w", gc.GRPCAddr, err))
		}
		s.GRPCAddr = s.gln.Addr().String()
		s.gln = conns.listen(s.gln, false, true)
	}
	var starting http.Handler = startingHandler(gc.RetryAfter)
	s.handler.Store(&starting)
	swap := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*s.handler.Load()).ServeHTTP(w, r) })
	s.server = NewServer(probeGate(swap, gc.RetryAfter), ServerOptions{ReadHeaderTimeout: gc.ReadHeaderTimeout, ReadTimeout: gc.ReadTimeout,
		WriteTimeout: gc.WriteTimeout, IdleTimeout: gc.IdleTimeout, MaxHeaderBytes: gc.MaxHeaderBytes})
	s.server.ConnState = conns.connState
	s.server.ConnContext = connContext
	s.URL = "http://" + ln.Addr().String()
	if gc.TLSCert != "" {
		if err := useTLS(s.server, gc.TLSCert, gc.TLSKey); err != nil {
			ln.Close()
			if s.gln != nil {
				s.gln.Close()
			}
			return fail(err)
		}
		s.URL = "https://" + ln.Addr().String()
	}
	warnExposed(log, gc)
	warnExposedGRPC(log, gc.GRPCAddr)
	ln = conns.listen(ln, true, false)
	wctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
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
	log.Info("gateway listening; bringing up the fleet", "url", s.URL, "models", g.ModelNames())
	sctx, stop := context.WithCancel(ctx)
	s.stopStart = stop
	go func() {
		defer close(s.ready)
		s.startErr = s.bringUp(sctx, wctx, cfg, opts, bodies)
		if s.startErr != nil {
			log.Error("gateway fleet did not come up", "err", s.startErr)
		}
	}()
	return s, nil
}

// bringUp starts the provider, launches and waits for the fleet, starts the controller, the
// watch loop and the dashboard, then swaps the real handler in and serves gRPC. It runs on
// Listen's goroutine; wctx bounds the loops it starts.
func (s *Stack) bringUp(ctx, wctx context.Context, cfg config.Config, opts StackOptions, bodies *bodyBudget) error {
	g, log, gc := s.Gateway, s.log, cfg.Gateway
	prov, err := newProvider(ctx, cfg, opts, log)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		closeProvider(prov)
		return err
	}
	if err := launchFleet(ctx, cfg, prov, log); err != nil {
		return fail(err)
	}
	insts, _ := prov.Instances(ctx)
	if err := g.Sync(ctx, insts); err != nil {
		return fail(fmt.Errorf("start workers: %w", err))
	}
	ctl, err := newController(ctx, cfg, g, prov, insts, log)
	if err != nil {
		return fail(err)
	}
	h, err := g.Handler(HandlerOptions{Gatherer: s.Registry, AdminToken: gc.AdminToken, OIP: oip.HandlerOptions{
		Limits: oipLimits(gc.MaxBodyBytes), RetryAfter: gc.RetryAfter}})
	if err != nil {
		return fail(err)
	}
	h, dash, err := mount(h, cfg, g, s.Registry, ctl, cmp.Or(opts.DashboardToken, gc.AdminToken), log)
	if err != nil {
		return fail(err)
	}
	h = g.guardBodies(h, bodies, gc.MaxBodyBytes, gc.RetryAfter)
	s.Provider, s.Controller, s.Dashboard = prov, ctl, dash
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		g.Watch(wctx, ctl, gc.SyncInterval) // the controller's view: instances it drains stay out
	}()
	go func() {
		defer s.wg.Done()
		ctl.Run(wctx)
	}()
	go func() {
		defer s.wg.Done()
		dash.Run(wctx)
	}()
	if s.grpc != nil {
		s.grpcServed = true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.grpc.Serve(s.gln); err != nil {
				log.Error("gateway gRPC server failed", "err", err)
			}
		}()
	}
	s.handler.Store(&h)
	log.Info("gateway ready", "url", s.URL, "models", g.ModelNames())
	return nil
}

// Ready is closed when the fleet's bring-up has ended, successfully or not (Wait says which).
func (s *Stack) Ready() <-chan struct{} { return s.ready }

// Wait blocks until the fleet is up (nil), its bring-up failed (the error, e.g. pods not ready
// within provider.kubernetes.start_timeout), or ctx ends (ctx's error).
func (s *Stack) Wait(ctx context.Context) error {
	select {
	case <-s.ready:
		return s.startErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startingHandler answers while the fleet is coming up: live, not ready, nothing served.
func startingHandler(retryAfter time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/health/live":
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(retryAfter.Seconds()))), 10))
		writeEnsembleJSON(w, http.StatusServiceUnavailable, oip.ErrorResponse{Error: "gateway: starting; the fleet is not up yet"})
	})
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
	s.stopStart()
	<-s.ready
	var errs []error
	if s.grpc != nil {
		if !s.grpcServed {
			s.gln.Close()
		}
		stopped := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			s.grpc.Stop()
		}
	}
	if err := s.server.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shut down gateway server: %w", err))
	}
	s.cancel()
	failed, err := s.Gateway.Close(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	s.wg.Wait()
	if s.Provider != nil {
		if err := closeProvider(s.Provider); err != nil {
			errs = append(errs, err)
		}
	}
	return failed, errors.Join(errs...)
}
