package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/oip"
)

// Deps are the Worker's injected dependencies; nil fields get safe defaults.
type Deps struct {
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
	// Registerer receives the worker's metrics; nil means a private registry.
	Registerer prometheus.Registerer
	// Gatherer is served at /metrics; nil means Registerer when it is also a Gatherer (a
	// *prometheus.Registry), else /metrics is not served.
	Gatherer prometheus.Gatherer
	// Now is the clock used to time batches; nil means time.Now.
	Now func() time.Time
	// Wrap, when not nil, wraps the HTTP handler (e.g. W3C trace context extraction,
	// telemetry.Middleware); nil serves the handler as is.
	Wrap func(http.Handler) http.Handler
}

// Worker serves loaded models over OIP v2. It implements oip.Core; its methods are safe for
// concurrent use.
type Worker struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	models  map[string]*served
	order   []string
	metrics *metrics
	handler http.Handler
	sem     chan struct{} // nil when MaxInFlight == 0

	draining  atomic.Bool
	closeOnce sync.Once
}

// served is one model with its metadata and pre-curried metrics.
type served struct {
	Model
	md           oip.ModelMetadata
	batchSeconds prometheus.Observer
	batchSize    prometheus.Observer
	codes        sync.Map // HTTP code → prometheus.Counter
}

var _ oip.Core = (*Worker)(nil)

// New builds a Worker over ms (taking ownership of their runners) with cfg and deps.
func New(cfg Config, ms []Model, deps Deps) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, errors.New("worker: no models")
	}
	w := &Worker{cfg: cfg, log: deps.Logger, now: deps.Now, models: map[string]*served{}}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	reg, gat := deps.Registerer, deps.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg = r
		if gat == nil {
			gat = r
		}
	}
	if gat == nil {
		gat, _ = reg.(prometheus.Gatherer)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("worker: metrics: %w", err)
	}
	w.metrics = m
	if cfg.MaxInFlight > 0 {
		w.sem = make(chan struct{}, cfg.MaxInFlight)
	}
	for _, mod := range ms {
		if err := checkModel(mod); err != nil {
			return nil, err
		}
		if _, dup := w.models[mod.Name]; dup || mod.Name == unknownModel {
			return nil, fmt.Errorf("worker: model name %q is repeated or reserved", mod.Name)
		}
		if mod.Version == "" {
			mod.Version = DefaultVersion
		}
		s := &served{
			Model: mod,
			md: oip.ModelMetadata{Name: mod.Name, Versions: []string{mod.Version}, Platform: mod.Platform,
				Inputs: mod.Inputs, Outputs: mod.Outputs},
			batchSeconds: m.batchSeconds.WithLabelValues(mod.Name),
			batchSize:    m.batchSize.WithLabelValues(mod.Name),
		}
		w.models[mod.Name] = s
		w.order = append(w.order, mod.Name)
	}
	h, err := oip.NewHandler(w, oip.HandlerOptions{Limits: cfg.Limits, RetryAfter: cfg.RetryAfter, Observe: w.observe, Now: w.now})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	mux := http.NewServeMux()
	if gat != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(gat, promhttp.HandlerOpts{}))
	}
	mux.Handle("/", h)
	w.handler = mux
	if deps.Wrap != nil {
		w.handler = deps.Wrap(mux)
	}
	return w, nil
}

// checkModel rejects a Model the worker cannot serve: only FP32 tensors with a batch dimension.
func checkModel(m Model) error {
	if m.Name == "" || m.Runner == nil {
		return fmt.Errorf("worker: model %q: needs a name and a runner", m.Name)
	}
	if len(m.Inputs) == 0 || len(m.Outputs) == 0 {
		return fmt.Errorf("worker: model %q: needs inputs and outputs", m.Name)
	}
	for _, t := range slices.Concat(m.Inputs, m.Outputs) {
		if t.Datatype != oip.DatatypeFP32 || len(t.Shape) == 0 {
			return fmt.Errorf("worker: model %q: tensor %q is %s%v; only FP32 tensors with a batch dimension are served", m.Name, t.Name, t.Datatype, t.Shape)
		}
	}
	return nil
}

// Handler returns the HTTP handler: the OIP v2 API and, when a Gatherer is known, /metrics.
func (w *Worker) Handler() http.Handler { return w.handler }

// observe counts every answered inference request by model and status code.
func (w *Worker) observe(o oip.Observation) {
	if o.Route != oip.RouteInfer {
		return
	}
	model := unknownModel
	if s, ok := w.models[o.Model]; ok {
		model = o.Model
		if c, ok := s.codes.Load(o.Code); ok {
			c.(prometheus.Counter).Inc()
			return
		}
		c := w.metrics.requests.WithLabelValues(model, strconv.Itoa(o.Code))
		s.codes.Store(o.Code, c)
		c.Inc()
		return
	}
	w.metrics.requests.WithLabelValues(model, strconv.Itoa(o.Code)).Inc()
}

// ServerMetadata implements oip.Core.
func (w *Worker) ServerMetadata(context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: w.cfg.ServerName, Version: w.cfg.ServerVersion, Extensions: []string{"model_repository"}}, nil
}

// Ready implements oip.Core: true until the worker starts draining.
func (w *Worker) Ready(context.Context) bool { return !w.draining.Load() }

// Models implements oip.Core.
func (w *Worker) Models(context.Context) ([]oip.RepositoryIndexEntry, error) {
	state := oip.StateReady
	if w.draining.Load() {
		state = oip.StateUnavailable
	}
	out := make([]oip.RepositoryIndexEntry, 0, len(w.order))
	for _, name := range w.order {
		out = append(out, oip.RepositoryIndexEntry{Name: name, Version: w.models[name].Version, State: state})
	}
	return out, nil
}

func (w *Worker) lookup(model, version string) (*served, error) {
	s, ok := w.models[model]
	if !ok {
		return nil, fmt.Errorf("%w: %q (serving %v)", oip.ErrModelNotFound, model, w.order)
	}
	if version != "" && version != s.Version {
		return nil, fmt.Errorf("%w: %q version %q (serving version %s)", oip.ErrModelNotFound, model, version, s.Version)
	}
	return s, nil
}

// ModelMetadata implements oip.Core.
func (w *Worker) ModelMetadata(_ context.Context, model, version string) (*oip.ModelMetadata, error) {
	s, err := w.lookup(model, version)
	if err != nil {
		return nil, err
	}
	return &s.md, nil
}

// ModelReady implements oip.Core.
func (w *Worker) ModelReady(_ context.Context, model, version string) (bool, error) {
	if _, err := w.lookup(model, version); err != nil {
		return false, err
	}
	return !w.draining.Load(), nil
}

// Infer implements oip.Core: it runs the request as one batch. A request whose "timeout"
// parameter has already expired is refused with ErrDeadline; the runner is otherwise given the
// request's context, cancelled when the client goes away.
func (w *Worker) Infer(ctx context.Context, call *oip.Call) (*oip.InferenceResponse, error) {
	s, err := w.lookup(call.Model, call.Version)
	if err != nil {
		return nil, err
	}
	if w.draining.Load() {
		return nil, oip.WithRetryAfter(fmt.Errorf("%w: worker is draining", oip.ErrUnavailable), w.cfg.RetryAfter)
	}
	if w.sem != nil {
		select {
		case w.sem <- struct{}{}:
			defer func() { <-w.sem }()
		default:
			return nil, oip.WithRetryAfter(fmt.Errorf("%w: %d batches already running", oip.ErrOverloaded, cap(w.sem)), w.cfg.RetryAfter)
		}
	}
	if call.SLO.Timeout > 0 {
		deadline := call.Arrival.Add(call.SLO.Timeout)
		if !w.now().Before(deadline) {
			return nil, fmt.Errorf("%w: timeout of %v passed before the batch ran", oip.ErrDeadline, call.SLO.Timeout)
		}
	}
	req := call.Request
	rows, err := oip.Rows(req)
	if err != nil {
		return nil, err
	}
	if rows == 0 {
		return nil, fmt.Errorf("%w: empty batch (0 rows)", oip.ErrBadRequest)
	}
	inputs := make([]models.Tensor, len(s.Inputs))
	for i, spec := range s.Inputs {
		in := req.Input(spec.Name) // present: the handler validated the request
		inputs[i] = models.Tensor{Name: in.Name, Shape: in.Shape, Data: in.FP32}
	}
	w.metrics.inFlight.Inc()
	start := w.now()
	outs, err := s.Runner.Run(ctx, inputs)
	elapsed := w.pace(ctx, rows, w.now().Sub(start))
	w.metrics.inFlight.Dec()
	if err != nil {
		switch {
		case errors.Is(err, models.ErrBadInput):
			return nil, fmt.Errorf("%w: %v", oip.ErrBadRequest, err)
		case errors.Is(err, context.DeadlineExceeded):
			return nil, fmt.Errorf("%w: model %q: %v", oip.ErrDeadline, s.Name, err)
		case errors.Is(err, context.Canceled):
			return nil, fmt.Errorf("model %q: %w", s.Name, err)
		}
		return nil, fmt.Errorf("%w: model %q: %v", oip.ErrInternal, s.Name, err)
	}
	s.batchSeconds.Observe(elapsed.Seconds())
	s.batchSize.Observe(float64(rows))
	if len(outs) != len(s.Outputs) {
		return nil, fmt.Errorf("%w: model %q returned %d outputs, its metadata declares %d", oip.ErrInternal, s.Name, len(outs), len(s.Outputs))
	}
	resp := &oip.InferenceResponse{ModelName: s.Name, ModelVersion: s.Version, ID: req.ID, ServiceTime: elapsed, Outputs: make([]oip.Tensor, len(outs))}
	for i, o := range outs {
		name := o.Name
		if name == "" {
			name = s.Outputs[i].Name
		}
		spec := &s.Outputs[i]
		if n, err := oip.ShapeElements(o.Shape); err != nil || n != int64(len(o.Data)) || !oip.ShapeMatches(spec.Shape, o.Shape) || o.Shape[0] != rows {
			return nil, fmt.Errorf("%w: model %q output %q has shape %v and %d values; metadata says %v with %d rows", oip.ErrInternal, s.Name, name, o.Shape, len(o.Data), spec.Shape, rows)
		}
		resp.Outputs[i] = oip.NewFP32(name, o.Shape, o.Data)
	}
	return resp, nil
}

// pace waits out what Config.MinRowTime and Config.CPUShare add to a batch of rows rows that
// computed for elapsed, and returns the batch's service time.
func (w *Worker) pace(ctx context.Context, rows int64, elapsed time.Duration) time.Duration {
	want := max(elapsed, time.Duration(rows)*w.cfg.MinRowTime)
	if f := w.cfg.CPUShare; f > 0 && f < 1 {
		want = time.Duration(float64(want) / f)
	}
	if want <= elapsed {
		return elapsed
	}
	t := time.NewTimer(want - elapsed)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return want
}

// Serve answers requests on ln until ctx is done, then drains: readiness turns false, new
// inference requests get 503, and in-flight ones get up to ShutdownTimeout to finish. It returns
// nil after a graceful shutdown. Serve does not close the runners; Close does.
func (w *Worker) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           w.handler,
		ReadHeaderTimeout: w.cfg.ReadHeaderTimeout,
		ReadTimeout:       w.cfg.ReadTimeout,
		WriteTimeout:      w.cfg.WriteTimeout,
		IdleTimeout:       w.cfg.IdleTimeout,
		MaxHeaderBytes:    w.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(w.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	w.log.Info("worker serving", "addr", ln.Addr().String(), "models", w.order)
	select {
	case err := <-errc:
		return fmt.Errorf("worker: serve: %w", err)
	case <-ctx.Done():
	}
	w.draining.Store(true)
	w.log.Info("worker draining", "timeout", w.cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("worker: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("worker: serve: %w", err)
	}
	w.log.Info("worker stopped")
	return nil
}

// Close marks the worker as draining and closes every model runner.
func (w *Worker) Close() error {
	var errs []error
	w.closeOnce.Do(func() {
		w.draining.Store(true)
		for _, name := range w.order {
			if err := w.models[name].Runner.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close model %q: %w", name, err))
			}
		}
	})
	return errors.Join(errs...)
}
