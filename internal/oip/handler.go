package oip

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Core is what a server behind the OIP v2 REST API provides. The worker (a model server) and the
// gateway (batching, dispatch, ensembles) both implement it and share NewHandler, so the wire
// format, validation and error mapping exist once. Methods are called concurrently from the HTTP
// server's goroutines. Errors should wrap the package's sentinel errors (ErrModelNotFound,
// ErrOverloaded, ...), optionally annotated with WithRetryAfter; anything else answers 500.
type Core interface {
	// ServerMetadata describes the server (GET /v2).
	ServerMetadata(ctx context.Context) (ServerMetadata, error)
	// Ready reports whether the server accepts inference requests; false while starting or
	// draining (GET /v2/health/ready).
	Ready(ctx context.Context) bool
	// Models lists the model repository (POST /v2/repository/index).
	Models(ctx context.Context) ([]RepositoryIndexEntry, error)
	// ModelMetadata returns the metadata of a model; version "" means the default version. It is
	// called for every inference request, so it must be cheap; the handler never modifies it.
	ModelMetadata(ctx context.Context, model, version string) (*ModelMetadata, error)
	// ModelReady reports whether a model (version) accepts inference requests.
	ModelReady(ctx context.Context, model, version string) (bool, error)
	// Infer serves one decoded request that ValidateRequest has accepted against the model's
	// metadata. The handler fills the response's model name, version and id when left empty,
	// drops outputs that were not requested, and sends ServiceTime as HeaderServiceTime.
	Infer(ctx context.Context, call *Call) (*InferenceResponse, error)
}

// Call is one inference request as handed to Core.Infer.
type Call struct {
	// Model and Version are taken from the URL; Version is "" for the default.
	Model, Version string
	// Request is the decoded, validated request.
	Request *InferenceRequest
	// Metadata is what Core.ModelMetadata returned for Model and Version.
	Metadata *ModelMetadata
	// SLO is the per-request override parsed from the request parameters (zero when absent).
	SLO RequestSLO
	// Arrival is when the handler received the request, before the body was read.
	Arrival time.Time
}

// Routes reported in Observation.Route.
const (
	RouteLive            = "live"
	RouteReady           = "ready"
	RouteServerMetadata  = "server_metadata"
	RouteModelMetadata   = "model_metadata"
	RouteModelReady      = "model_ready"
	RouteInfer           = "infer"
	RouteRepositoryIndex = "repository_index"
	RouteModelConfig     = "model_config"
	RouteModelStats      = "model_stats"
	// RouteRepositoryLoad and RouteRepositoryUnload are Triton's model repository load and
	// unload (served when the Core implements RepositoryManager).
	RouteRepositoryLoad   = "repository_load"
	RouteRepositoryUnload = "repository_unload"
	RouteUnknown          = "unknown"
)

// Observation describes one answered request, for the owner's metrics.
type Observation struct {
	// Route is one of the Route constants.
	Route string
	// Model and Version are as given in the URL; they are client input, so a metrics label must
	// be bounded by the owner (e.g. only known model names).
	Model, Version string
	// Code is the HTTP status code sent.
	Code int
	// Rows is the batch size of an inference request (0 when it was not decoded).
	Rows int64
	// Elapsed is the time from arrival to the answer being written.
	Elapsed time.Duration
	// Canceled reports that the client went away (its context was canceled) before the answer;
	// Code is then the 400 sent in its place, and metrics should count a cancellation, not a
	// bad request.
	Canceled bool
}

// HandlerOptions configures NewHandler. The zero value is usable.
type HandlerOptions struct {
	// Limits bounds request bodies and tensors; zero means DefaultLimits.
	Limits Limits
	// RetryAfter is the Retry-After sent with 429 and 503 answers whose error carries no hint
	// (WithRetryAfter); zero means 1 s.
	RetryAfter time.Duration
	// Observe, if set, is called once per request after the answer is written, from the
	// request's goroutine; it must be cheap and safe for concurrent use.
	Observe func(Observation)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultRetryAfter is the Retry-After used when neither the error nor the options give one.
const DefaultRetryAfter = time.Second

// NewHandler returns the OIP v2 REST handler over core:
//
//	GET  /v2/health/live                             liveness (always 200 while serving)
//	GET  /v2/health/ready                            Core.Ready
//	GET  /v2                                         Core.ServerMetadata
//	GET  /v2/models/{m}[/versions/{v}]               Core.ModelMetadata
//	GET  /v2/models/{m}[/versions/{v}]/ready         Core.ModelReady
//	POST /v2/models/{m}[/versions/{v}]/infer         decode, validate, Core.Infer, encode
//	POST /v2/repository/index                        Core.Models (body {"ready": true} filters)
//	POST /v2/repository/models/{m}/load              RepositoryManager.LoadModel (404 without one)
//	POST /v2/repository/models/{m}/unload            RepositoryManager.UnloadModel (404 without one)
//	GET  /v2/models/{m}[/versions/{v}]/config        ConfigOf (Triton's model configuration)
//	GET  /v2/models[/{m}[/versions/{v}]]/stats       StatisticsOf (Triton's statistics)
//
// A server or model that is not ready is answered 400, as Triton does (the protocol asks for a
// 4xx status).
//
// Every error answer is JSON {"error": "..."} with the status of StatusOf, and Retry-After for
// 429 and 503 (and for a 504 whose error carries a hint, WithRetryAfter).
func NewHandler(core Core, opts HandlerOptions) (http.Handler, error) {
	if core == nil {
		return nil, errors.New("oip: NewHandler: nil Core")
	}
	opts.Limits = opts.Limits.WithDefaults()
	if err := opts.Limits.Validate(); err != nil {
		return nil, fmt.Errorf("oip: NewHandler: %w", err)
	}
	if opts.RetryAfter < 0 {
		return nil, fmt.Errorf("oip: NewHandler: retry_after: must be >= 0, got %v", opts.RetryAfter)
	}
	if opts.RetryAfter == 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	h := &handler{core: core, opts: opts, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /v2/health/live", h.live)
	h.mux.HandleFunc("GET /v2/health/ready", h.ready)
	h.mux.HandleFunc("GET /v2", h.serverMetadata)
	h.mux.HandleFunc("GET /v2/models/{model}", h.modelMetadata)
	h.mux.HandleFunc("GET /v2/models/{model}/versions/{version}", h.modelMetadata)
	h.mux.HandleFunc("GET /v2/models/{model}/ready", h.modelReady)
	h.mux.HandleFunc("GET /v2/models/{model}/versions/{version}/ready", h.modelReady)
	h.mux.HandleFunc("POST /v2/models/{model}/infer", h.infer)
	h.mux.HandleFunc("POST /v2/models/{model}/versions/{version}/infer", h.infer)
	h.mux.HandleFunc("POST /v2/repository/index", h.repositoryIndex)
	h.mux.HandleFunc("POST /v2/repository/models/{model}/load", h.repositoryLoad)
	h.mux.HandleFunc("POST /v2/repository/models/{model}/unload", h.repositoryUnload)
	h.mux.HandleFunc("GET /v2/models/{model}/config", h.modelConfig)
	h.mux.HandleFunc("GET /v2/models/{model}/versions/{version}/config", h.modelConfig)
	h.mux.HandleFunc("GET /v2/models/stats", h.modelStats)
	h.mux.HandleFunc("GET /v2/models/{model}/stats", h.modelStats)
	h.mux.HandleFunc("GET /v2/models/{model}/versions/{version}/stats", h.modelStats)
	return h, nil
}

type handler struct {
	core Core
	opts HandlerOptions
	mux  *http.ServeMux
}

// ServeHTTP routes r; requests no pattern matches get the mux's 404 or 405 as a JSON error.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !IsCleanPath(r.URL.Path) {
		start := h.opts.Now()
		code := h.writeError(w, fmt.Errorf("%w: path %q is not clean (empty, \".\" or \"..\" segment)", ErrNotFound, r.URL.Path))
		h.observe(Observation{Route: RouteUnknown, Code: code}, start)
		return
	}
	hd, pattern := h.mux.Handler(r)
	if pattern != "" {
		h.mux.ServeHTTP(w, r) // sets the path values; Handler does not
		return
	}
	start := h.opts.Now()
	probe := &statusProbe{header: http.Header{}}
	hd.ServeHTTP(probe, r)
	err := fmt.Errorf("%w: no endpoint %s %s", ErrNotFound, r.Method, r.URL.Path)
	if probe.code == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		err = fmt.Errorf("%w: %s %s (allowed: %s)", ErrMethodNotAllowed, r.Method, r.URL.Path, probe.header.Get("Allow"))
	}
	code := h.writeError(w, err)
	h.observe(Observation{Route: RouteUnknown, Code: code}, start)
}

// statusProbe captures the status the mux's built-in not-found and method-not-allowed handlers
// would send, so that ServeHTTP can answer in JSON instead.
type statusProbe struct {
	header http.Header
	code   int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(code int)        { p.code = code }

func (h *handler) observe(o Observation, start time.Time) {
	if h.opts.Observe != nil {
		o.Elapsed = h.opts.Now().Sub(start)
		h.opts.Observe(o)
	}
}

// writeError sends err as {"error": "..."} with its status code, and returns the code.
func (h *handler) writeError(w http.ResponseWriter, err error) int {
	code := StatusOf(err)
	if code == 499 {
		// The client is gone; nginx's 499 is not a valid status to send.
		code = http.StatusBadRequest
	}
	after, hinted := RetryAfter(err)
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout && hinted {
		if !hinted {
			after = h.opts.RetryAfter
		}
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(after.Seconds())), 10))
	}
	writeJSON(w, code, ErrorResponse{Error: err.Error()})
	return code
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (h *handler) live(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	h.observe(Observation{Route: RouteLive, Code: http.StatusOK}, start)
}

func (h *handler) ready(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	code := http.StatusOK
	if h.core.Ready(r.Context()) {
		writeJSON(w, code, map[string]bool{"ready": true})
	} else {
		code = http.StatusBadRequest // Triton's answer (the protocol asks for a 4xx)
		writeJSON(w, code, ErrorResponse{Error: "server is not ready"})
	}
	h.observe(Observation{Route: RouteReady, Code: code}, start)
}

func (h *handler) serverMetadata(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	code := http.StatusOK
	md, err := h.core.ServerMetadata(r.Context())
	if err != nil {
		code = h.writeError(w, err)
	} else {
		if md.Extensions == nil {
			md.Extensions = []string{}
		}
		writeJSON(w, code, md)
	}
	h.observe(Observation{Route: RouteServerMetadata, Code: code}, start)
}

func (h *handler) modelMetadata(w http.ResponseWriter, r *http.Request) {
	h.modelJSON(w, r, RouteModelMetadata, func(ctx context.Context, m, v string) (any, error) {
		return h.core.ModelMetadata(ctx, m, v)
	})
}

// modelJSON answers a GET about model {model} (version {version}) with what get returns, as JSON,
// or its error, and observes the answer under route.
func (h *handler) modelJSON(w http.ResponseWriter, r *http.Request, route string, get func(ctx context.Context, m, v string) (any, error)) {
	start := h.opts.Now()
	m, v := r.PathValue("model"), r.PathValue("version")
	code := http.StatusOK
	out, err := get(r.Context(), m, v)
	if err != nil {
		code = h.writeError(w, err)
	} else {
		writeJSON(w, code, out)
	}
	h.observe(Observation{Route: route, Model: m, Version: v, Code: code}, start)
}

func (h *handler) modelReady(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	m, v := r.PathValue("model"), r.PathValue("version")
	code := http.StatusOK
	ok, err := h.core.ModelReady(r.Context(), m, v)
	switch {
	case err != nil:
		code = h.writeError(w, err)
	case !ok:
		code = http.StatusBadRequest // Triton's answer (the protocol asks for a 4xx)
		writeJSON(w, code, ErrorResponse{Error: fmt.Sprintf("model %q is not ready", m)})
	default:
		writeJSON(w, code, map[string]any{"name": m, "ready": true})
	}
	h.observe(Observation{Route: RouteModelReady, Model: m, Version: v, Code: code}, start)
}

func (h *handler) modelConfig(w http.ResponseWriter, r *http.Request) {
	h.modelJSON(w, r, RouteModelConfig, func(ctx context.Context, m, v string) (any, error) {
		return ConfigOf(ctx, h.core, m, v)
	})
}

func (h *handler) modelStats(w http.ResponseWriter, r *http.Request) {
	h.modelJSON(w, r, RouteModelStats, func(ctx context.Context, m, v string) (any, error) {
		st, err := StatisticsOf(ctx, h.core, m, v)
		if st == nil {
			st = []ModelStatistics{}
		}
		return StatisticsResponse{ModelStats: st}, err
	})
}

// maxIndexBody bounds the body of POST /v2/repository/index.
const maxIndexBody = 64 << 10

func (h *handler) repositoryIndex(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	code, err := func() (int, error) {
		var q RepositoryIndexRequest
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxIndexBody))
		if err != nil {
			return 0, fmt.Errorf("%w: reading body: %v", ErrTooLarge, err)
		}
		if len(body) > 0 {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&q); err != nil {
				return 0, fmt.Errorf("%w: repository index request: %v", ErrBadRequest, err)
			}
			if dec.More() {
				return 0, fmt.Errorf("%w: repository index request: trailing data", ErrBadRequest)
			}
		}
		all, err := h.core.Models(r.Context())
		if err != nil {
			return 0, err
		}
		list := make([]RepositoryIndexEntry, 0, len(all))
		for _, e := range all {
			if !q.Ready || e.State == StateReady {
				list = append(list, e)
			}
		}
		writeJSON(w, http.StatusOK, list)
		return http.StatusOK, nil
	}()
	if err != nil {
		code = h.writeError(w, err)
	}
	h.observe(Observation{Route: RouteRepositoryIndex, Code: code}, start)
}

// bufPool recycles request and response bodies of the inference path.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledBuf keeps very large bodies out of the pool.
const maxPooledBuf = 4 << 20

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}

// readBody reads r's body into (*buf), enforcing limit; ErrTooLarge when it is longer.
func readBody(w http.ResponseWriter, r *http.Request, buf *[]byte, limit int64) error {
	if r.ContentLength > limit {
		return fmt.Errorf("%w: body is %d bytes, limit %d", ErrTooLarge, r.ContentLength, limit)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	b := *buf
	if r.ContentLength > 0 && int64(cap(b)) < r.ContentLength+1 {
		b = make([]byte, 0, r.ContentLength+1)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			*buf = b
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return fmt.Errorf("%w: body exceeds the limit of %d bytes", ErrTooLarge, limit)
			}
			if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOverloaded) {
				return fmt.Errorf("reading body: %w", err) // the server's own refusal (a byte budget), not the client's error
			}
			return fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
		}
	}
	*buf = b
	return nil
}

func (h *handler) infer(w http.ResponseWriter, r *http.Request) {
	start := h.opts.Now()
	m, v := r.PathValue("model"), r.PathValue("version")
	obs := Observation{Route: RouteInfer, Model: m, Version: v}
	buf := getBuf()
	defer putBuf(buf)
	req, resp, err := h.serveInfer(w, r, m, v, start, buf, &obs)
	headerLen := 0
	if err == nil {
		*buf, headerLen, err = appendResponse((*buf)[:0], resp, binaryOutputs(req, resp))
		if err != nil {
			err = fmt.Errorf("%w: encoding response: %v", ErrInternal, err)
		}
	}
	if err != nil {
		obs.Canceled = StatusOf(err) == 499 || r.Context().Err() != nil
		obs.Code = h.writeError(w, err)
		h.observe(obs, start)
		return
	}
	hdr := w.Header()
	if headerLen < len(*buf) {
		hdr.Set("Content-Type", "application/octet-stream")
		hdr.Set(HeaderInferenceHeaderLength, strconv.Itoa(headerLen))
	} else {
		hdr.Set("Content-Type", "application/json")
	}
	hdr.Set("Content-Length", strconv.Itoa(len(*buf)))
	if resp.ServiceTime > 0 {
		hdr.Set(HeaderServiceTime, strconv.FormatInt(resp.ServiceTime.Microseconds(), 10))
	}
	w.WriteHeader(http.StatusOK)
	w.Write(*buf)
	obs.Code = http.StatusOK
	h.observe(obs, start)
}

// serveInfer runs the inference path up to the Core's response.
func (h *handler) serveInfer(w http.ResponseWriter, r *http.Request, m, v string, arrival time.Time, buf *[]byte, obs *Observation) (*InferenceRequest, *InferenceResponse, error) {
	headerLen := -1
	if hl := r.Header.Get(HeaderInferenceHeaderLength); hl != "" {
		n, err := strconv.Atoi(hl)
		if err != nil || n < 0 {
			return nil, nil, fmt.Errorf("%w: header %s: %q is not a length", ErrBadRequest, HeaderInferenceHeaderLength, hl)
		}
		headerLen = n
	}
	ctx := r.Context()
	md, err := h.core.ModelMetadata(ctx, m, v)
	if err != nil {
		return nil, nil, err
	}
	if err := readBody(w, r, buf, h.opts.Limits.MaxBodyBytes); err != nil {
		return nil, nil, err
	}
	var req *InferenceRequest
	if headerLen >= 0 {
		req, err = DecodeRequestBinary(*buf, headerLen, h.opts.Limits)
	} else {
		req, err = DecodeRequest(*buf, h.opts.Limits)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(req.Inputs) > 0 && len(req.Inputs[0].Shape) > 0 {
		obs.Rows = req.Inputs[0].Shape[0]
	}
	if err := ValidateRequest(req, md); err != nil {
		return nil, nil, err
	}
	slo, err := ParseSLO(req.Parameters)
	if err != nil {
		return nil, nil, err
	}
	resp, err := h.core.Infer(ctx, &Call{Model: m, Version: v, Request: req, Metadata: md, SLO: slo, Arrival: arrival})
	if err != nil {
		return nil, nil, err
	}
	if resp == nil {
		return nil, nil, fmt.Errorf("%w: model %q returned no response", ErrInternal, m)
	}
	if resp.ModelName == "" {
		resp.ModelName = m
	}
	if resp.ModelVersion == "" {
		resp.ModelVersion = v
	}
	if resp.ID == "" {
		resp.ID = req.ID
	}
	resp.Outputs = FilterOutputs(resp.Outputs, req.Outputs)
	return req, resp, nil
}
