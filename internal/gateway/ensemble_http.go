package gateway

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/sloserve/sloserve/internal/oip"
)

// maxFeedbackBytes bounds a feedback request body.
const maxFeedbackBytes = 1 << 20

// ensembleRoutes serves the ensembles' own endpoints in front of next (the OIP handler):
//
//	POST /v2/models/{name}/feedback  {"id": "...", "label": k} | [{...}, ...] | {"feedback": [...]}
//	                                 → {"learned": n, "unknown": [...]}; Bearer adminToken when set
//	GET  /v2/models/{name}/stats     → EnsembleStats as JSON; Bearer adminToken when set (an
//	                                 ensemble's; other models' are Triton's statistics, from next)
//
// Everything else goes to next.
func (g *Gateway) ensembleRoutes(next http.Handler, adminToken string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/models/{name}/feedback", func(w http.ResponseWriter, r *http.Request) {
		if adminToken != "" && !bearerOK(r, adminToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sloserve admin"`)
			writeEnsembleJSON(w, http.StatusUnauthorized, oip.ErrorResponse{Error: "feedback needs the admin bearer token"})
			return
		}
		labels, err := decodeFeedback(http.MaxBytesReader(w, r.Body, maxFeedbackBytes))
		if err == nil {
			var res FeedbackResult
			if res, err = g.Feedback(r.PathValue("name"), labels); err == nil {
				writeEnsembleJSON(w, http.StatusOK, res)
				return
			}
		}
		writeEnsembleJSON(w, oip.StatusOf(err), oip.ErrorResponse{Error: err.Error()})
	})
	mux.HandleFunc("GET /v2/models/{name}/stats", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := g.ens.Get(r.PathValue("name")); !ok {
			next.ServeHTTP(w, r) // a model's Triton statistics (oip handler)
			return
		}
		if adminToken != "" && !bearerOK(r, adminToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sloserve admin"`)
			writeEnsembleJSON(w, http.StatusUnauthorized, oip.ErrorResponse{Error: "ensemble stats need the admin bearer token"})
			return
		}
		s, err := g.EnsembleStats(r.PathValue("name"))
		if err != nil {
			writeEnsembleJSON(w, oip.StatusOf(err), oip.ErrorResponse{Error: err.Error()})
			return
		}
		writeEnsembleJSON(w, http.StatusOK, s)
	})
	mux.Handle("/", next)
	return mux
}

// bearerOK reports whether r carries "Authorization: Bearer <token>"; the scheme is
// case-insensitive (RFC 7235 §2.1), as the dashboard's check.
func bearerOK(r *http.Request, token string) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(token)) == 1
}

// decodeFeedback reads one label object, an array of them, or {"feedback": [...]}.
func decodeFeedback(r io.Reader) ([]Label, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, fmt.Errorf("%w: feedback body larger than %d bytes", oip.ErrTooLarge, maxFeedbackBytes)
		}
		return nil, fmt.Errorf("%w: read feedback: %v", oip.ErrBadRequest, err)
	}
	b = bytes.TrimSpace(b)
	strict := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return err
		}
		if dec.More() {
			return errors.New("trailing data")
		}
		return nil
	}
	var labels []Label
	switch {
	case len(b) > 0 && b[0] == '[':
		err = strict(&labels)
	case bytes.Contains(b, []byte(`"feedback"`)):
		var wrap struct {
			Feedback []Label `json:"feedback"`
		}
		err = strict(&wrap)
		labels = wrap.Feedback
	default:
		var l Label
		err = strict(&l)
		labels = []Label{l}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: feedback must be {\"id\": ..., \"label\": k}, a list of them or {\"feedback\": [...]}: %v", oip.ErrBadRequest, err)
	}
	if len(labels) == 0 {
		return nil, fmt.Errorf("%w: feedback: no labels", oip.ErrBadRequest)
	}
	return labels, nil
}

func writeEnsembleJSON(w http.ResponseWriter, code int, v any) {
	if code == 499 {
		code = http.StatusBadRequest
	}
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
