package oip

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// RepositoryManager is implemented by a Core that loads and unloads models at run time —
// Triton's model repository extension (POST /v2/repository/models/{model}/load and …/unload,
// and the gRPC RepositoryModelLoad/RepositoryModelUnload RPCs). The REST handler and the gRPC
// service serve those routes only when their Core implements it (404 / UNIMPLEMENTED otherwise).
type RepositoryManager interface {
	// LoadModel loads a model from the repository, or reloads it when it is loaded (its new
	// version set and configuration replace the old once ready; requests in flight finish on the
	// old). It returns an error wrapping ErrNotFound when the repository holds no such model and
	// ErrBadRequest for a malformed configuration or parameters. It returns once the model is
	// ready or loading failed.
	LoadModel(ctx context.Context, model string, params map[string]any) error
	// UnloadModel stops serving a model: new requests get ErrNotFound, those in flight are
	// answered, then its instances stop. Unloading a model that is not loaded is not an error;
	// one the repository does not hold wraps ErrNotFound.
	UnloadModel(ctx context.Context, model string) error
}

// repositoryRequest is the body of Triton's load and unload requests (both optional).
type repositoryRequest struct {
	Parameters map[string]any `json:"parameters"`
}

func (h *handler) repositoryLoad(w http.ResponseWriter, r *http.Request) {
	h.repositoryChange(w, r, RouteRepositoryLoad, func(rm RepositoryManager, m string, params map[string]any) error {
		return rm.LoadModel(r.Context(), m, params)
	})
}

func (h *handler) repositoryUnload(w http.ResponseWriter, r *http.Request) {
	h.repositoryChange(w, r, RouteRepositoryUnload, func(rm RepositoryManager, m string, params map[string]any) error {
		for k := range params {
			if k != "unload_dependents" { // Triton's one unload parameter; sloserve has no dependents
				return fmt.Errorf("%w: unload parameter %q is not supported", ErrBadRequest, k)
			}
		}
		return rm.UnloadModel(r.Context(), m)
	})
}

// repositoryChange decodes the optional body {"parameters": {...}} and calls do with the
// Core's RepositoryManager; 501 when the Core has none.
func (h *handler) repositoryChange(w http.ResponseWriter, r *http.Request, route string, do func(RepositoryManager, string, map[string]any) error) {
	start := h.opts.Now()
	m := r.PathValue("model")
	err := func() error {
		rm, ok := h.core.(RepositoryManager)
		if !ok {
			return fmt.Errorf("%w: this server has no model repository", ErrNotImplemented)
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxIndexBody))
		if err != nil {
			return fmt.Errorf("%w: reading body: %v", ErrTooLarge, err)
		}
		var q repositoryRequest
		if len(bytes.TrimSpace(body)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&q); err != nil {
				return fmt.Errorf("%w: %s request: %v", ErrBadRequest, route, err)
			}
			if dec.More() {
				return fmt.Errorf("%w: %s request: trailing data", ErrBadRequest, route)
			}
		}
		return do(rm, m, q.Parameters)
	}()
	code := http.StatusOK
	if err != nil {
		code = h.writeError(w, err)
	} else {
		writeJSON(w, code, struct{}{})
	}
	h.observe(Observation{Route: route, Model: m, Code: code}, start)
}
