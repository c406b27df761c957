package adapters

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/oip"
)

type httpCase struct {
	name, method, path, body string
	header                   map[string]string
	code                     int
	want                     string // JSON compared semantically; "" skips
	errHas                   string // substring of the "error" field for error answers
	retryAfter               string
}

func runCases(t *testing.T, h http.Handler, tests []httpCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("%s %s: code %d, want %d; body %s", tc.method, tc.path, rec.Code, tc.code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer is not JSON: %v: %s", err, rec.Body)
			}
			if tc.want != "" {
				var want any
				if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
					t.Fatalf("bad want: %v", err)
				}
				if !reflect.DeepEqual(want, got) {
					t.Errorf("answer (-want +got)\n-%s\n+%s", tc.want, strings.TrimSpace(rec.Body.String()))
				}
			}
			if tc.code >= 400 {
				msg, _ := got.(map[string]any)["error"].(string)
				if msg == "" || !strings.Contains(msg, tc.errHas) {
					t.Errorf(`error answer %s: want {"error": "...%s..."}`, rec.Body, tc.errHas)
				}
			}
			if ra := rec.Header().Get("Retry-After"); ra != tc.retryAfter {
				t.Errorf("Retry-After = %q, want %q", ra, tc.retryAfter)
			}
		})
	}
}

func TestV1Handler(t *testing.T) {
	lim := oip.DefaultLimits()
	lim.MaxBodyBytes, lim.MaxTensorElements = 4096, 64
	h := NewV1Handler(&fakeCore{}, Options{Limits: lim})
	post := func(name, path, body string, code int, want, errHas string) httpCase {
		return httpCase{name: name, method: http.MethodPost, path: path, body: body, code: code, want: want, errHas: errHas}
	}
	runCases(t, h, []httpCase{
		{name: "list", method: http.MethodGet, path: "/v1/models", code: 200, want: `{"models":["double","sum"]}`},
		{name: "status", method: http.MethodGet, path: "/v1/models/double", code: 200, want: `{"name":"double","ready":true}`},
		{name: "status version", method: http.MethodGet, path: "/v1/models/double/versions/1", code: 200, want: `{"name":"double","ready":true}`},
		{name: "status not ready", method: http.MethodGet, path: "/v1/models/down", code: 200, want: `{"name":"down","ready":false}`},
		{name: "status unknown", method: http.MethodGet, path: "/v1/models/nope", code: 404, errHas: "model not found"},

		post("row format, one output", "/v1/models/double:predict", `{"instances": [[1, 2.5], [-1, 0.1]]}`, 200, `{"predictions": [[2, 5], [-2, 0.2]]}`, ""),
		post("versioned", "/v1/models/double/versions/1:predict", `{"instances": [[1, 2]]}`, 200, `{"predictions": [[2, 4]]}`, ""),
		post("named instances", "/v1/models/double:predict", `{"instances": [{"x": [1, 2]}]}`, 200, `{"predictions": [[2, 4]]}`, ""),
		post("two outputs give objects", "/v1/models/sum:predict", `{"instances": [[1, 5, 2], [0, 0, 3]]}`, 200,
			`{"predictions": [{"sum": 8, "argmax": 1}, {"sum": 3, "argmax": 2}]}`, ""),
		post("two inputs", "/v1/models/pair:predict", `{"instances": [{"a": 1, "b": 2}, {"a": 10, "b": -3}]}`, 200, `{"predictions": [3, 7]}`, ""),
		post("BYTES strings and b64", "/v1/models/text:predict", `{"instances": ["abc", {"b64": "aGk="}]}`, 200, `{"predictions": [3, 2]}`, ""),
		post("columnar", "/v1/models/double:predict", `{"inputs": [[1, 2], [3, 4]]}`, 200, `{"outputs": [[2, 4], [6, 8]]}`, ""),
		post("columnar named, signature ignored", "/v1/models/pair:predict", `{"signature_name": "serving_default", "inputs": {"a": [1], "b": [2]}}`, 200, `{"outputs": [3]}`, ""),
		post("columnar two outputs", "/v1/models/sum:predict", `{"inputs": [[1, 1, 1]]}`, 200, `{"outputs": {"sum": [3], "argmax": [0]}}`, ""),

		post("unknown model", "/v1/models/nope:predict", `{"instances": [[1, 2]]}`, 404, "", "model not found"),
		post("not JSON", "/v1/models/double:predict", `{"instances": [[1, 2]`, 400, "", "not valid JSON"),
		post("trailing data", "/v1/models/double:predict", `{"instances": [[1, 2]]} {}`, 400, "", "trailing data"),
		post("array body", "/v1/models/double:predict", `[[1, 2]]`, 400, "", "must be an object"),
		post("no instances", "/v1/models/double:predict", `{}`, 400, "", `missing "instances"`),
		post("both forms", "/v1/models/double:predict", `{"instances": [[1, 2]], "inputs": [[1, 2]]}`, 400, "", "not both"),
		post("unknown field", "/v1/models/double:predict", `{"instances": [[1, 2]], "x": 1}`, 400, "", `unknown field "x"`),
		post("empty instances", "/v1/models/double:predict", `{"instances": []}`, 400, "", "non-empty"),
		post("ragged", "/v1/models/double:predict", `{"instances": [[1, 2], [3]]}`, 400, "", "ragged"),
		post("wrong row size", "/v1/models/double:predict", `{"instances": [[1, 2, 3]]}`, 400, "", "shape"),
		post("string for FP32", "/v1/models/double:predict", `{"instances": [["1", 2]]}`, 400, "", "want a number"),
		post("FP32 overflow", "/v1/models/double:predict", `{"instances": [[1e39, 2]]}`, 400, "", "FP32 range"),
		post("fraction for INT64", "/v1/models/pair:predict", `{"instances": [{"a": 1.5, "b": 2}]}`, 400, "", "integer"),
		post("missing input", "/v1/models/pair:predict", `{"instances": [{"a": 1, "c": 2}]}`, 400, "", `lacks input "b"`),
		post("values for two-input model", "/v1/models/pair:predict", `{"instances": [1, 2]}`, 400, "", "must be an object naming them"),
		post("bad b64", "/v1/models/text:predict", `{"instances": [{"b64": "!!"}]}`, 400, "", "base64"),
		post("too many elements", "/v1/models/double:predict", `{"instances": [`+strings.Repeat(`[1,2],`, 40)+`[1,2]]}`, 413, "", "limit"),
		post("body too large", "/v1/models/double:predict", `{"instances": [[1, 2]], "pad": "`+strings.Repeat("x", 5000)+`"}`, 413, "", "limit"),
		post("not predict", "/v1/models/double:explain", `{"instances": [[1, 2]]}`, 404, "", "no endpoint"),
		post("no verb", "/v1/models/double", `{"instances": [[1, 2]]}`, 404, "", "no endpoint"),
		post("empty model", "/v1/models/:predict", `{"instances": [[1, 2]]}`, 400, "", "empty model name"),
		{name: "overloaded", method: http.MethodPost, path: "/v1/models/busy:predict", body: `{"instances": [[1, 2]]}`, code: 429, errHas: "overloaded", retryAfter: "2"},
		{name: "unavailable", method: http.MethodPost, path: "/v1/models/down:predict", body: `{"instances": [[1, 2]]}`, code: 503, errHas: "unavailable", retryAfter: "1"},
		{name: "unknown path", method: http.MethodGet, path: "/v2/models/double", code: 404, errHas: "no endpoint"},
	})
}

func TestSageMakerHandler(t *testing.T) {
	core := &fakeCore{}
	h := SageMakerHandler(core, "double")
	runCases(t, h, []httpCase{
		{name: "ping", method: http.MethodGet, path: "/ping", code: 200, want: `{"status":"healthy"}`},
		{name: "instances", method: http.MethodPost, path: "/invocations", body: `{"instances": [[1, 2]]}`, header: map[string]string{"Content-Type": "application/json"},
			code: 200, want: `{"predictions": [[2, 4]]}`},
		{name: "bare array", method: http.MethodPost, path: "/invocations", body: `[[1, 2], [3, 4]]`, code: 200, want: `{"predictions": [[2, 4], [6, 8]]}`},
		{name: "target model header", method: http.MethodPost, path: "/invocations", body: `[[1, 5, 2]]`, header: map[string]string{HeaderTargetModel: "sum.tar.gz"},
			code: 200, want: `{"predictions": [{"sum": 8, "argmax": 1}]}`},
		{name: "OIP v2 body", method: http.MethodPost, path: "/invocations", body: `{"id": "q", "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}`,
			code: 200, want: `{"model_name": "double", "id": "q", "outputs": [{"name": "y", "datatype": "FP32", "shape": [1, 2], "data": [2, 4]}]}`},
		{name: "OIP v2 body, bad shape", method: http.MethodPost, path: "/invocations", body: `{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]}`,
			code: 400, errHas: "shape"},
		{name: "CSV refused", method: http.MethodPost, path: "/invocations", body: "1,2\n", header: map[string]string{"Content-Type": "text/csv"}, code: 415, errHas: "application/json"},
		{name: "bad JSON", method: http.MethodPost, path: "/invocations", body: `[[1, 2]`, code: 400, errHas: "not valid JSON"},
		{name: "scalar body", method: http.MethodPost, path: "/invocations", body: `3`, code: 400, errHas: "body must be"},
		{name: "unknown target", method: http.MethodPost, path: "/invocations", body: `[[1, 2]]`, header: map[string]string{HeaderTargetModel: "nope"}, code: 404, errHas: "model not found"},
		{name: "other path", method: http.MethodGet, path: "/invocations", code: 404, errHas: "no endpoint"},
	})

	t.Run("ping while not ready", func(t *testing.T) {
		core.mu.Lock()
		core.notReady = true
		core.mu.Unlock()
		defer func() { core.mu.Lock(); core.notReady = false; core.mu.Unlock() }()
		runCases(t, h, []httpCase{{name: "server", method: http.MethodGet, path: "/ping", code: 503, errHas: "not ready", retryAfter: "1"}})
	})
	runCases(t, SageMakerHandler(core, "down"), []httpCase{{name: "ping model not ready", method: http.MethodGet, path: "/ping", code: 503, errHas: "not ready", retryAfter: "1"}})
	runCases(t, SageMakerHandler(core, ""), []httpCase{
		{name: "no default model", method: http.MethodPost, path: "/invocations", body: `[[1, 2]]`, code: 400, errHas: "no default model"},
		{name: "ping without model", method: http.MethodGet, path: "/ping", code: 200},
	})
	runCases(t, SageMakerHandler(nil, "x"), []httpCase{{name: "nil core", method: http.MethodGet, path: "/ping", code: 500, errHas: "no core"}})
}

// GET on a predict route is 405 with Allow: POST, not a status lookup of "m:predict".
func TestV1PredictWrongMethod(t *testing.T) {
	h := NewV1Handler(&fakeCore{}, Options{})
	for _, path := range []string{"/v1/models/m:predict", "/v1/models/m/versions/1:predict"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPost {
			t.Errorf("GET %s (-want +got): -405 Allow POST +%d Allow %q", path, w.Code, w.Header().Get("Allow"))
		}
	}
}
