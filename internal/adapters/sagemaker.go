package adapters

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// HeaderTargetModel is the header with which a SageMaker multi-model endpoint names the model
// of an invocation; the adapter uses its value, less a ".tar.gz" suffix, as the model name.
const HeaderTargetModel = "X-Amzn-Sagemaker-Target-Model"

// SageMakerHandler returns the SageMaker inference container contract over core with default
// Options; see NewSageMakerHandler.
func SageMakerHandler(core oip.Core, defaultModel string) http.Handler {
	return NewSageMakerHandler(core, defaultModel, Options{})
}

// NewSageMakerHandler returns the Amazon SageMaker inference container contract over core
// (the container listens on port 8080):
//
//	GET  /ping          200 {"status": "healthy"} when the server and the default model are
//	                    ready, else 503 JSON error
//	POST /invocations   application/json body, served by defaultModel (or the model named by
//	                    HeaderTargetModel):
//	                      {"instances": [...]} or a bare array → {"predictions": [...]}
//	                      {"inputs": ...} (TF columnar)      → {"outputs": ...}
//	                      an OIP v2 inference request        → an OIP v2 inference response
//
// Errors are JSON {"error": "..."} with oip.StatusOf's code (415 for a non-JSON content type).
func NewSageMakerHandler(core oip.Core, defaultModel string, opts Options) http.Handler {
	p := &predictor{core: core, opts: opts.withDefaults()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) { p.ping(w, r, defaultModel) })
	mux.HandleFunc("POST /invocations", func(w http.ResponseWriter, r *http.Request) { p.invoke(w, r, defaultModel) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		p.writeError(w, fmt.Errorf("%w: no endpoint %s %s (SageMaker serves GET /ping and POST /invocations)", oip.ErrNotFound, r.Method, r.URL.Path))
	})
	return oip.CleanPaths(p.guard(mux))
}

func (p *predictor) ping(w http.ResponseWriter, r *http.Request, model string) {
	ctx := r.Context()
	if !p.core.Ready(ctx) {
		p.writeError(w, fmt.Errorf("%w: server is not ready", oip.ErrUnavailable))
		return
	}
	if model != "" {
		ready, err := p.core.ModelReady(ctx, model, "")
		if err == nil && !ready {
			err = fmt.Errorf("%w: model %q is not ready", oip.ErrUnavailable, model)
		}
		if err != nil {
			p.writeError(w, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "healthy"})
}

func (p *predictor) invoke(w http.ResponseWriter, r *http.Request, model string) {
	arrival := p.opts.Now()
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			writeJSON(w, http.StatusUnsupportedMediaType, oip.ErrorResponse{Error: fmt.Sprintf("content type %q is not supported; send application/json", ct)})
			return
		}
	}
	if t := r.Header.Get(HeaderTargetModel); t != "" {
		model = strings.TrimSuffix(strings.TrimPrefix(t, "/"), ".tar.gz")
	}
	if model == "" {
		p.writeError(w, fmt.Errorf("%w: no model: the endpoint has no default model and the request has no %s header", oip.ErrBadRequest, HeaderTargetModel))
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
	if isV2Request(doc) {
		p.invokeV2(w, r, model, body, arrival)
		return
	}
	out, err := p.predict(r.Context(), model, "", doc, arrival)
	if err != nil {
		p.writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// isV2Request reports whether doc looks like an OIP v2 request: "inputs" is an array of objects
// with a "datatype" (TF columnar "inputs" never carry one).
func isV2Request(doc any) bool {
	obj, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	ins, ok := obj["inputs"].([]any)
	if !ok || len(ins) == 0 {
		return false
	}
	first, ok := ins[0].(map[string]any)
	if !ok {
		return false
	}
	_, ok = first["datatype"]
	return ok
}

// invokeV2 serves an OIP v2 request body as the v2 handler would.
func (p *predictor) invokeV2(w http.ResponseWriter, r *http.Request, model string, body []byte, arrival time.Time) {
	resp, err := func() ([]byte, error) {
		ctx := r.Context()
		md, err := p.core.ModelMetadata(ctx, model, "")
		if err != nil {
			return nil, err
		}
		req, err := oip.DecodeRequest(body, p.opts.Limits)
		if err != nil {
			return nil, err
		}
		if err := oip.ValidateRequest(req, md); err != nil {
			return nil, err
		}
		slo, err := oip.ParseSLO(req.Parameters)
		if err != nil {
			return nil, err
		}
		out, err := p.core.Infer(ctx, &oip.Call{Model: model, Request: req, Metadata: md, SLO: slo, Arrival: arrival})
		if err != nil {
			return nil, err
		}
		if out == nil {
			return nil, fmt.Errorf("%w: model %q returned no response", oip.ErrInternal, model)
		}
		if out.ModelName == "" {
			out.ModelName = model
		}
		if out.ID == "" {
			out.ID = req.ID
		}
		out.Outputs = oip.FilterOutputs(out.Outputs, req.Outputs)
		b, err := oip.AppendResponse(nil, out)
		if err != nil {
			return nil, fmt.Errorf("%w: encoding response: %v", oip.ErrInternal, err)
		}
		return b, nil
	}()
	if err != nil {
		p.writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(resp)
}
