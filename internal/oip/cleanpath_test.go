package oip

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCleanPaths(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/v2/models/m/infer", http.StatusNoContent},
		{"/v1/", http.StatusNoContent},
		{"/", http.StatusNoContent},
		{"/v1/models//:predict", http.StatusNotFound},
		{"//v2", http.StatusNotFound},
		{"/v2/models/../infer", http.StatusNotFound},
		{"/v2/./health/live", http.StatusNotFound},
		{"/v2//", http.StatusNotFound},
	} {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		req.URL.Path = tc.path
		rec := httptest.NewRecorder()
		CleanPaths(ok).ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("%s: code %d, want %d", tc.path, rec.Code, tc.code)
			continue
		}
		if tc.code == http.StatusNotFound {
			var e ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Errorf("%s: body %q is not a JSON error (%v)", tc.path, rec.Body, err)
			}
		}
	}
}

func TestHandlerAnswersUncleanPathWithJSON(t *testing.T) {
	h, err := NewHandler(&fakeCore{ready: true}, HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.URL.Path = "/v2/models//infer"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("code %d, want 404: %s", rec.Code, rec.Body)
	}
}
