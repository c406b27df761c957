package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultMaxBodyBytes bounds an inference request body.
const DefaultMaxBodyBytes = 8 << 20

// HandlerOptions configure the gateway's HTTP handler.
type HandlerOptions struct {
	// Gatherer serves /metrics; nil serves no /metrics route.
	Gatherer prometheus.Gatherer
	// MaxBodyBytes bounds a request body, in bytes; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// RetryAfter is the Retry-After value sent with 429 and 503 answers; 0 means 1 s.
	RetryAfter time.Duration
}

// Handler returns the gateway's OIP v2 REST handler: health, metadata, inference and /metrics.
func (g *Gateway) Handler(opts HandlerOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	h := &handler{g: g, opts: opts, retryAfter: strconv.Itoa(int((opts.RetryAfter + time.Second - 1) / time.Second))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/health/live", h.live)
	mux.HandleFunc("GET /v2/health/ready", h.ready)
	mux.HandleFunc("GET /v2", h.server)
	mux.HandleFunc("GET /v2/models/{model}", h.model)
	mux.HandleFunc("GET /v2/models/{model}/ready", h.modelReady)
	mux.HandleFunc("POST /v2/models/{model}/infer", h.infer)
	mux.HandleFunc("POST /v2/models/{model}/versions/{version}/infer", h.infer)
	for _, p := range []string{"/v2/models/{model}/infer", "/v2/models/{model}/versions/{version}/infer"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST for inference")
		})
	}
	if opts.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route for "+r.Method+" "+r.URL.Path)
	})
	return mux
}

type handler struct {
	g          *Gateway
	opts       HandlerOptions
	retryAfter string
}

func (h *handler) live(w http.ResponseWriter, r *http.Request) {
	if h.g.closed.Load() {
		writeError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// ready reports ready when every model has at least one instance taking batches.
func (h *handler) ready(w http.ResponseWriter, r *http.Request) {
	for _, m := range h.g.Models() {
		ids, err := h.g.Instances(m)
		if err != nil || len(ids) == 0 {
			writeError(w, http.StatusServiceUnavailable, "model "+m+" has no ready instance")
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (h *handler) server(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"name": "sloserve", "version": "0", "extensions": []string{}})
}

func (h *handler) model(w http.ResponseWriter, r *http.Request) {
	b, err := h.g.batcher(r.PathValue("model"))
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	md := modelMetadata{Name: b.name, Platform: "sloserve-gateway", Inputs: []TensorSpec{}, Outputs: []TensorSpec{}}
	if s := b.schema.Load(); s != nil {
		md.Inputs = *s
	}
	writeJSON(w, http.StatusOK, md)
}

func (h *handler) modelReady(w http.ResponseWriter, r *http.Request) {
	ids, err := h.g.Instances(r.PathValue("model"))
	switch {
	case errors.Is(err, ErrModelNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil || len(ids) == 0:
		writeError(w, http.StatusServiceUnavailable, "no ready instance")
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func (h *handler) infer(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	model := r.PathValue("model")
	b, err := h.g.batcher(model)
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	body, err := readBody(r, h.opts.MaxBodyBytes)
	var resp Response
	if err == nil {
		resp, err = h.g.Infer(r.Context(), model, body)
	}
	status, outcome := classify(err)
	if r.Context().Err() != nil && err != nil && !errors.Is(err, ErrBadRequest) {
		outcome = outcomeCanceled
	}
	b.m.outcome[outcome].Inc()
	b.m.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", h.retryAfter)
		}
		writeError(w, status, err.Error())
		return
	}
	hd := w.Header()
	hd["Content-Type"] = jsonContentType
	if resp.ServiceTime > 0 {
		hd[ServiceTimeHeader] = []string{strconv.FormatInt(resp.ServiceTime.Microseconds(), 10)}
	}
	hd[BatchSizeHeader] = []string{strconv.Itoa(resp.BatchSize)}
	w.WriteHeader(http.StatusOK)
	w.Write(resp.Body)
}

var jsonContentType = []string{"application/json"}

// readBody reads at most limit bytes of the request body; a larger body is a bad request.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	n := r.ContentLength
	if n > limit {
		return nil, errors.Join(ErrBadRequest, errors.New("body larger than "+strconv.FormatInt(limit, 10)+" bytes"))
	}
	buf := make([]byte, 0, max(n, 512)+1)
	lr := io.LimitReader(r.Body, limit+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errors.Join(ErrBadRequest, err)
		}
	}
	if int64(len(buf)) > limit {
		return nil, errors.Join(ErrBadRequest, errors.New("body larger than "+strconv.FormatInt(limit, 10)+" bytes"))
	}
	return buf, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode response"}`)
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	w.Write(b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
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
