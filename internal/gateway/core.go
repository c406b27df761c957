package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sloserve/sloserve/internal/gateway/metrics"
	"github.com/sloserve/sloserve/internal/oip"
)

// The Gateway is the oip.Core behind the shared OIP v2 handler.
var _ oip.Core = (*Gateway)(nil)

// ServerMetadata implements oip.Core: the build's version (Options.Version) and the Triton
// extensions the gateway's handlers serve (oip.Extensions).
func (g *Gateway) ServerMetadata(ctx context.Context) (oip.ServerMetadata, error) {
	v := g.version
	if v == "" {
		v = "(devel)"
	}
	ext := oip.Extensions(g)
	if g.repoMgr.Load() == nil { // load and unload answer "no repository": not an extension served
		ext = slices.DeleteFunc(ext, func(e string) bool { return e == "model_repository" })
	}
	return oip.ServerMetadata{Name: "sloserve-gateway", Version: v, Extensions: ext}, nil
}

// Ready implements oip.Core: the gateway is ready while it is open, has the fleet view (with
// Options.ReadyAfterSync: a clean Sync done), and every model — each
// configured model and each loaded version of a repository model — has at least one instance
// taking batches (Triton's --strict-readiness, its default).
func (g *Gateway) Ready(ctx context.Context) bool {
	if g.closed.Load() || g.unsynced.Load() {
		return false
	}
	t := g.repo.Load()
	for _, m := range g.ModelNames() {
		if t != nil && t.internal[m] != t.live[m] {
			continue // a repository generation loading or retiring: not served
		}
		if ids, err := g.Instances(m); err != nil || len(ids) == 0 {
			return false
		}
	}
	return true
}

// Models implements oip.Core.
func (g *Gateway) Models(ctx context.Context) ([]oip.RepositoryIndexEntry, error) {
	names := g.ModelNames()
	out := make([]oip.RepositoryIndexEntry, 0, len(names))
	internal := map[string]bool{}
	if t := g.repo.Load(); t != nil {
		internal = t.internal
	}
	for _, n := range names {
		if internal[n] {
			continue // listed by the repository, under its public name
		}
		state := oip.StateReady
		if ok, _ := g.ModelReady(ctx, n, ""); !ok {
			state = oip.StateUnavailable
		}
		out = append(out, oip.RepositoryIndexEntry{Name: n, State: state})
	}
	if r := g.repoMgr.Load(); r != nil {
		out = append(out, r.Index(ctx)...)
	}
	return append(out, g.ensembleIndex(ctx)...), nil
}

// ModelMetadata implements oip.Core: the metadata configured for the model or learnt from its
// first instance. A version the metadata does not list (checkVersion) is ErrModelNotFound, so
// that /versions/9/infer is 404 rather than served by another version.
func (g *Gateway) ModelMetadata(ctx context.Context, model, version string) (*oip.ModelMetadata, error) {
	if e, ok := g.ens.Get(model); ok {
		md, ok := e.Metadata()
		if !ok {
			return nil, ErrNoMetadata
		}
		return md, checkVersion(model, version, md)
	}
	b, v, err := g.lookup(model, version)
	if err != nil {
		return nil, err
	}
	md := b.Metadata()
	if md == nil {
		if version != "" && version != defaultVersion {
			return nil, fmt.Errorf("%w: %q version %q (metadata not known yet)", ErrModelNotFound, model, version)
		}
		return nil, ErrNoMetadata
	}
	if v != "" {
		return g.repoMetadata(model, md), nil
	}
	return md, checkVersion(model, version, md)
}

// defaultVersion is the one version of a model whose metadata lists none (Triton numbers a
// model's first version 1).
const defaultVersion = "1"

// checkVersion returns nil when version is "" or one of md.Versions (defaultVersion when it lists
// none), else an error wrapping ErrModelNotFound. The gateway serves one version per model.
func checkVersion(model, version string, md *oip.ModelMetadata) error {
	if version == "" {
		return nil
	}
	if len(md.Versions) == 0 {
		if version == defaultVersion {
			return nil
		}
	} else if slices.Contains(md.Versions, version) {
		return nil
	}
	return fmt.Errorf("%w: %q has no version %q", ErrModelNotFound, model, version)
}

// ModelReady implements oip.Core; an unknown version is ErrModelNotFound.
func (g *Gateway) ModelReady(ctx context.Context, model, version string) (bool, error) {
	if version != "" {
		if _, err := g.ModelMetadata(ctx, model, version); err != nil && !errors.Is(err, ErrNoMetadata) {
			return false, err
		}
	}
	if e, ok := g.ens.Get(model); ok {
		return e.Ready(ctx), nil
	}
	b, _, err := g.lookup(model, version)
	if err != nil {
		return false, err
	}
	ids, err := g.Instances(b.Name())
	if err != nil {
		return false, err
	}
	return len(ids) > 0, nil
}

// Infer implements oip.Core: it queues the validated request in its model's batcher and waits
// for the answer. The deadline is the handler's arrival time plus the request's own bound
// (parameters "timeout" in µs or "latency_ms"), or else the model's SLO threshold.
func (g *Gateway) Infer(ctx context.Context, c *oip.Call) (*oip.InferenceResponse, error) {
	if e, ok := g.ens.Get(c.Model); ok {
		return e.Infer(ctx, c) // fans out to the members through this same method
	}
	b, version, release, err := g.acquire(c.Model, c.Version)
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := oip.Rows(c.Request)
	if err != nil {
		return nil, err
	}
	if b.MaxRows() > 0 && rows > b.MaxRows() {
		return nil, fmt.Errorf("%w: %d rows, model %s accepts at most %d", ErrTooManyRows, rows, c.Model, b.MaxRows())
	}
	if c.Version != "" && c.Metadata != nil {
		if err := checkVersion(c.Model, c.Version, c.Metadata); err != nil {
			return nil, err
		}
	}
	timeout := b.SLO().Threshold
	if d := c.SLO.Bound(); d > 0 {
		if err := feasibleDeadline(d, rows, b.Cost()); err != nil {
			return nil, err
		}
		timeout = d
	}
	arrival := c.Arrival
	if arrival.IsZero() {
		arrival = time.Now()
	}
	st := g.liveStats(c.Model)
	st.arrivals.Add(1)
	resp, err := b.Submit(ctx, c.Request, rows, oip.RequestBytes(c.Request), arrival, timeout)
	done := time.Now()
	st.record(arrival, done, b.SLO().Threshold, err)
	b.m.Request(rows, arrival, done, err)
	if err != nil {
		g.logDetail(c.Model, err)
	}
	if resp != nil && version != "" {
		resp.ModelName, resp.ModelVersion = c.Model, version // not the worker's modelrepo.VersionKey
	}
	return resp, err
}

// backendLogEvery bounds the backend error texts logged: one per interval, with the count of
// those left out.
const backendLogEvery = time.Second

// logDetail logs the instance's own text of a failed request's error, which the client is not
// sent, at most once per backendLogEvery.
func (g *Gateway) logDetail(model string, err error) {
	detail, ok := detailOf(err)
	if !ok {
		return
	}
	now := time.Now().UnixNano()
	last := g.detailLogged.Load()
	if now-last < int64(backendLogEvery) || !g.detailLogged.CompareAndSwap(last, now) {
		g.detailSkipped.Add(1)
		return
	}
	g.log.Warn("backend failed a request", "model", model, "answer", err.Error(), "detail", detail,
		"not_logged_since", g.detailSkipped.Swap(0))
}

// HandlerOptions configure the gateway's HTTP handler.
type HandlerOptions struct {
	// OIP configures the shared OIP v2 handler (limits, Retry-After); its Observe is set by the
	// gateway to record request metrics.
	OIP oip.HandlerOptions
	// Gatherer serves /metrics; nil serves no /metrics route.
	Gatherer prometheus.Gatherer
	// AdminToken, when not empty, is the bearer token that admin endpoints require (ensemble
	// label feedback: POST /v2/models/{ensemble}/feedback).
	AdminToken string
}

// Handler returns the gateway's HTTP handler: the shared OIP v2 REST handler over the gateway
// (health, metadata, inference) plus /metrics.
func (g *Gateway) Handler(opts HandlerOptions) (http.Handler, error) {
	o := opts.OIP
	o.Observe = g.observe
	oh, err := oip.NewHandler(g, o)
	if err != nil {
		return nil, fmt.Errorf("gateway handler: %w", err)
	}
	lim := o.Limits
	if lim == (oip.Limits{}) {
		lim = oip.DefaultLimits()
	}
	// The model is looked up before the body is read (Start adds the byte budget in front of
	// every route).
	h := g.ensembleRoutes(g.guardBodies(oh, nil, lim.MaxBodyBytes, o.RetryAfter), opts.AdminToken)
	if opts.Gatherer == nil {
		return h, nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{}))
	mux.Handle("GET "+WorkersMetricsPath, metrics.WorkersHandler(g.workerTargets))
	mux.Handle("/", h)
	return oip.CleanPaths(mux), nil
}

// observe counts one answered inference request; requests for unknown models are not counted,
// which keeps the model label bounded.
func (g *Gateway) observe(o oip.Observation) {
	if o.Route != oip.RouteInfer {
		return
	}
	b, _, err := g.lookup(o.Model, o.Version)
	if err != nil {
		return
	}
	outcome := metrics.OutcomeOf(o.Code)
	if o.Canceled {
		outcome = metrics.OutcomeCanceled
	}
	b.m.Answer(b.SLO().Threshold, outcome, o.Elapsed)
}

// ServerOptions bound the gateway's http.Server.
type ServerOptions struct {
	// Addr is the listen address, e.g. "127.0.0.1:8080".
	Addr string
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the http.Server timeouts;
	// zero values get 5 s, 30 s, 60 s and 120 s.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes bounds request headers, in bytes; 0 means 64 KiB.
	MaxHeaderBytes int
}

// NewServer returns an http.Server for h with every timeout and limit set.
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	def := func(d, v time.Duration) time.Duration {
		if d <= 0 {
			return v
		}
		return d
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	return &http.Server{
		Addr:              o.Addr,
		Handler:           h,
		ReadHeaderTimeout: def(o.ReadHeaderTimeout, 5*time.Second),
		ReadTimeout:       def(o.ReadTimeout, 30*time.Second),
		WriteTimeout:      def(o.WriteTimeout, 60*time.Second),
		IdleTimeout:       def(o.IdleTimeout, 120*time.Second),
		MaxHeaderBytes:    o.MaxHeaderBytes,
	}
}

// WorkersMetricsPath is the gateway's federation endpoint of its workers' metrics
// (metrics.WorkersHandler; docs/observability.md).
const WorkersMetricsPath = metrics.WorkersMetricsPath

// workerTargets returns the instances of every model (draining ones included: they still serve).
func (g *Gateway) workerTargets() []metrics.WorkerTarget {
	var out []metrics.WorkerTarget
	for _, name := range g.ModelNames() {
		b, err := g.batcher(name)
		if err != nil {
			continue
		}
		insts, _ := b.Instances()
		for _, in := range insts {
			out = append(out, metrics.WorkerTarget{Model: name, ID: in.ID, Addr: in.Addr})
		}
	}
	return out
}
