package adapters

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sloserve/sloserve/internal/oip"
)

// V1Handler returns the TF Serving / KServe V1 REST API over core with default Options; see
// NewV1Handler.
func V1Handler(core oip.Core) http.Handler { return NewV1Handler(core, Options{}) }

// NewV1Handler returns the TF Serving / KServe V1 REST API over core:
//
//	GET  /v1/models                                  {"models": [names]} (Core.Models)
//	GET  /v1/models/{m}[/versions/{v}]               {"name": m, "ready": bool} (Core.ModelReady)
//	POST /v1/models/{m}[/versions/{v}]:predict       {"instances": [...]} → {"predictions": [...]}
//	                                                 {"inputs": ...}      → {"outputs": ...}
//
// Each instance is one row of the model's input (or, for several inputs, an object with one row
// per input name); the instances are stacked into one batch, validated against the model's
// metadata and served by Core.Infer, and each prediction is that instance's row of the output
// (or an object of rows for several outputs), as TF Serving answers. BYTES elements may be
// strings or {"b64": "..."}. Errors are JSON {"error": "..."} with oip.StatusOf's code.
func NewV1Handler(core oip.Core, opts Options) http.Handler {
	p := &predictor{core: core, opts: opts.withDefaults()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", p.list)
	mux.HandleFunc("GET /v1/models/{model}", p.status)
	mux.HandleFunc("GET /v1/models/{model}/versions/{version}", p.status)
	mux.HandleFunc("POST /v1/models/{target}", p.v1Predict)
	mux.HandleFunc("POST /v1/models/{model}/versions/{target}", p.v1Predict)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p.writeError(w, fmt.Errorf("%w: no endpoint %s %s", oip.ErrNotFound, r.Method, r.URL.Path))
	})
	return oip.CleanPaths(p.guard(mux))
}

// guard answers 500 JSON when the handler was built over a nil Core instead of panicking.
func (p *predictor) guard(h http.Handler) http.Handler {
	if p.core != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.writeError(w, fmt.Errorf("%w: adapter has no core", oip.ErrInternal))
	})
}

func (p *predictor) list(w http.ResponseWriter, r *http.Request) {
	ms, err := p.core.Models(r.Context())
	if err != nil {
		p.writeError(w, err)
		return
	}
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, m.Name)
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": names})
}

func (p *predictor) status(w http.ResponseWriter, r *http.Request) {
	m, v := r.PathValue("model"), r.PathValue("version")
	if strings.HasSuffix(m, ":predict") || strings.HasSuffix(v, ":predict") {
		w.Header().Set("Allow", http.MethodPost)
		p.writeError(w, fmt.Errorf("%w: %s %s (allowed: POST)", oip.ErrMethodNotAllowed, r.Method, r.URL.Path))
		return
	}
	ready, err := p.core.ModelReady(r.Context(), m, v)
	if err != nil {
		p.writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": m, "ready": ready})
}

func (p *predictor) v1Predict(w http.ResponseWriter, r *http.Request) {
	arrival := p.opts.Now()
	target := r.PathValue("target")
	i := strings.LastIndexByte(target, ':')
	if i < 0 || target[i+1:] != "predict" {
		p.writeError(w, fmt.Errorf("%w: no endpoint POST %s (want .../{model}:predict)", oip.ErrNotFound, r.URL.Path))
		return
	}
	m, v := target[:i], ""
	if r.PathValue("model") != "" {
		m, v = r.PathValue("model"), target[:i]
	}
	if m == "" {
		p.writeError(w, fmt.Errorf("%w: empty model name in %s", oip.ErrBadRequest, r.URL.Path))
		return
	}
	body, err := p.readBody(w, r)
	if err != nil {
		p.writeError(w, err)
		return
	}
	doc, err := decodeJSON(body)
	if err != nil {
		p.writeError(w, err)
		return
	}
	if _, ok := doc.(map[string]any); !ok {
		p.writeError(w, fmt.Errorf(`%w: body must be an object with "instances" or "inputs"`, oip.ErrBadRequest))
		return
	}
	out, err := p.predict(r.Context(), m, v, doc, arrival)
	if err != nil {
		p.writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
