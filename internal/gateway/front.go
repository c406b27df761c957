package gateway

import (
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

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/oipgrpc"
	"github.com/sloserve/sloserve/internal/telemetry"
)

// FrontOptions are what Listen needs besides the gateway and its handler.
type FrontOptions struct {
	// Config is the gateway section: addresses, TLS, timeouts, connection and body budgets.
	Config config.Gateway
	// Instances is the number of workers the stack runs: their descriptors are kept out of the
	// connection budget (sizeConnBudget).
	Instances int
	// Registerer receives the connection metrics.
	Registerer prometheus.Registerer
	// Logger receives the listeners' warnings and the servers' failures.
	Logger *slog.Logger
	// Tracing propagates the clients' W3C trace context (telemetry.Middleware); nil propagates
	// nothing.
	Tracing *telemetry.Tracing
}

// Front is the gateway's listening side: the HTTP server on Config.Addr (TLS when configured),
// the OIP v2 gRPC server on Config.GRPCAddr and the admin (pprof) server, behind one connection
// budget and one request-body budget.
type Front struct {
	// URL is the gateway's base URL, e.g. "http://127.0.0.1:8080".
	URL string
	// GRPCAddr is the host:port of the OIP v2 gRPC endpoint, or "" when not served.
	GRPCAddr string

	server  *http.Server
	grpc    *grpc.Server
	admin   *telemetry.Admin
	ln, gln net.Listener
	log     *slog.Logger
	wg      sync.WaitGroup
}

// OIPLimits are the OIP decoder's limits with the configured body bound (0: the default).
func OIPLimits(maxBody int64) oip.Limits {
	l := oip.DefaultLimits()
	if maxBody > 0 {
		l.MaxBodyBytes = maxBody
	}
	return l
}

// Listen guards h with the body and connection budgets and opens the gateway's listeners
// (HTTP, gRPC, admin); Serve then serves them until Close.
func Listen(g *Gateway, h http.Handler, o FrontOptions) (*Front, error) {
	gc, log := o.Config, o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Front{log: log}
	bodies := newBodyBudget(gc.MaxInflightBodyBytes)
	h = g.guardBodies(h, bodies, gc.MaxBodyBytes, gc.RetryAfter)
	maxConns, lowered := sizeConnBudget(gc.MaxConnections, fileLimit(), o.Instances)
	if lowered {
		log.Warn("gateway.max_connections lowered to fit the open-files limit (ulimit -n) less the descriptors kept for workers and files",
			"max_connections", gc.MaxConnections, "budget", maxConns, "open_files_limit", fileLimit())
	}
	conns := newConnBudget(maxConns, gc.MaxConnectionsPerClient, connProbeReserve)
	if err := registerConnMetrics(o.Registerer, conns); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", gc.Addr)
	if err != nil {
		return nil, fmt.Errorf("gateway.addr %s: %w", gc.Addr, err)
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
				SampleRatio: gc.AccessLogSample, Tracing: o.Tracing})),
		}
		if gc.TLSCert != "" { // the REST endpoint's certificate serves gRPC too
			creds, cerr := grpcTLS(gc.TLSCert, gc.TLSKey)
			if cerr != nil {
				ln.Close()
				return nil, cerr
			}
			gopts = append(gopts, grpc.Creds(creds))
		}
		// Reflection and health let grpcurl, grpc_health_probe and Kubernetes gRPC probes work
		// without the .proto file (docs/protocols.md).
		f.grpc, err = oipgrpc.NewServer(g, oipgrpc.Options{Limits: OIPLimits(gc.MaxBodyBytes), RetryAfter: gc.RetryAfter, Observe: g.observe,
			BodyBudget: bodies, Reflection: true, Health: true, ServerOptions: gopts})
		if err == nil {
			gln, err = net.Listen("tcp", gc.GRPCAddr)
		}
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("gateway.grpc_addr %s: %w", gc.GRPCAddr, err)
		}
		f.GRPCAddr = gln.Addr().String()
		gln = conns.listen(gln, false, true)
	}
	h = telemetry.Middleware(h, telemetry.AccessLogOptions{Logger: log, SampleRatio: gc.AccessLogSample, Route: routeOf,
		Tracing: o.Tracing})
	if gc.AdminAddr != "" {
		if f.admin, err = telemetry.StartAdmin(gc.AdminAddr, log); err != nil {
			ln.Close()
			if gln != nil {
				gln.Close()
			}
			return nil, fmt.Errorf("gateway.admin_addr: %w", err)
		}
		log.Info("admin server (pprof) listening", "url", "http://"+f.admin.Addr+"/debug/pprof/")
	}
	f.server = NewServer(probeGate(h, gc.RetryAfter), ServerOptions{ReadHeaderTimeout: gc.ReadHeaderTimeout, ReadTimeout: gc.ReadTimeout,
		WriteTimeout: gc.WriteTimeout, IdleTimeout: gc.IdleTimeout, MaxHeaderBytes: gc.MaxHeaderBytes})
	f.server.ConnState = conns.connState
	f.server.ConnContext = connContext
	f.URL = "http://" + ln.Addr().String()
	if gc.TLSCert != "" {
		if err := useTLS(f.server, gc.TLSCert, gc.TLSKey); err != nil {
			ln.Close()
			if gln != nil {
				gln.Close()
			}
			f.admin.Close()
			return nil, err
		}
		f.URL = "https://" + ln.Addr().String()
	}
	warnExposed(log, gc)
	if gc.TLSCert == "" {
		warnExposedGRPC(log, gc.GRPCAddr)
	}
	f.ln, f.gln = conns.listen(ln, true, false), gln
	return f, nil
}

// Serve serves the listeners, each on its own goroutine, until Close.
func (f *Front) Serve() {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		serve := f.server.Serve
		if f.server.TLSConfig != nil {
			serve = func(ln net.Listener) error { return f.server.ServeTLS(ln, "", "") }
		}
		if err := serve(f.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			f.log.Error("gateway server failed", "err", err)
		}
	}()
	if f.grpc != nil {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := f.grpc.Serve(f.gln); err != nil {
				f.log.Error("gateway gRPC server failed", "err", err)
			}
		}()
	}
}

// Close stops accepting connections: the gRPC server stops gracefully (at once when ctx ends),
// the admin server closes and the HTTP server shuts down (waiting for its requests until ctx
// ends); then the serving goroutines have returned.
func (f *Front) Close(ctx context.Context) error {
	if f.grpc != nil {
		stopped := make(chan struct{})
		go func() { f.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-ctx.Done():
			f.grpc.Stop()
		}
	}
	f.admin.Close()
	var err error
	if serr := f.server.Shutdown(ctx); serr != nil {
		err = fmt.Errorf("shut down gateway server: %w", serr)
	}
	f.wg.Wait()
	return err
}
