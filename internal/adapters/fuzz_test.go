package adapters

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/oip"
)

// FuzzPredict posts arbitrary bodies to the V1 predict and SageMaker invocation endpoints: the
// adapters never panic, and every answer is JSON with 200 or a 4xx/5xx {"error": ...}.
func FuzzPredict(f *testing.F) {
	for _, s := range []string{
		`{"instances": [[1, 2.5], [-1, 0.1]]}`, `{"instances": [{"a": 1, "b": 2}]}`, `{"inputs": {"a": [1], "b": [2]}}`,
		`{"instances": ["abc", {"b64": "aGk="}]}`, `[[1, 2]]`, `{"instances": [[[[[1]]]]]}`, `{"instances": [[1e999, 2]]}`,
		`{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}`,
	} {
		f.Add("double", s)
		f.Add("pair", s)
		f.Add("text", s)
	}
	lim := oip.DefaultLimits()
	lim.MaxBodyBytes, lim.MaxTensorElements, lim.MaxTotalElements = 1<<16, 1<<12, 1<<12
	core := &fakeCore{}
	v1 := NewV1Handler(core, Options{Limits: lim})
	sm := NewSageMakerHandler(core, "double", Options{Limits: lim})
	f.Fuzz(func(t *testing.T, model, body string) {
		for _, tc := range []struct {
			h    http.Handler
			path string
		}{{v1, "/v1/models/" + model + ":predict"}, {sm, "/invocations"}} {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			req.URL.Path = tc.path
			req.Header.Set(HeaderTargetModel, model)
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, req)
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s: answer %d is not a JSON object: %v: %q", tc.path, rec.Code, err, rec.Body)
			}
			if rec.Code != http.StatusOK {
				if _, ok := v["error"].(string); !ok || rec.Code < 400 {
					t.Fatalf("%s: answer %d %s, want 200 or an error object", tc.path, rec.Code, rec.Body)
				}
			}
		}
	})
}
