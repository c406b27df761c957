package oip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCore is a hand-written Core with one model "mlp" (input FP32 [-1,4], outputs "probs" FP32
// [-1,2] and "label" INT64 [-1]) and models whose Infer fails in a chosen way.
type fakeCore struct {
	mu    sync.Mutex
	ready bool
	calls []*Call
}

var mlpMetadata = &ModelMetadata{
	Name: "mlp", Versions: []string{"1"}, Platform: "onnx",
	Inputs:  []TensorMetadata{{Name: "input", Datatype: DatatypeFP32, Shape: []int64{-1, 4}}},
	Outputs: []TensorMetadata{{Name: "probs", Datatype: DatatypeFP32, Shape: []int64{-1, 2}}, {Name: "label", Datatype: DatatypeINT64, Shape: []int64{-1}}},
}

var failures = map[string]error{
	"busy":   WithRetryAfter(fmt.Errorf("queue full: %w", ErrOverloaded), 3*time.Second),
	"slow":   fmt.Errorf("queued too long: %w", ErrDeadline),
	"asleep": WithRetryAfter(fmt.Errorf("buffered through a cold start: %w", ErrDeadline), 2*time.Second),
	"broken": errors.New("segfault in kernel"),
	"cold":   fmt.Errorf("loading: %w", ErrUnavailable),
}

func (c *fakeCore) ServerMetadata(context.Context) (ServerMetadata, error) {
	return ServerMetadata{Name: "fake", Version: "0.1"}, nil
}
func (c *fakeCore) Ready(context.Context) bool { return c.ready }
func (c *fakeCore) Models(context.Context) ([]RepositoryIndexEntry, error) {
	return []RepositoryIndexEntry{{Name: "mlp", Version: "1", State: StateReady}, {Name: "cold", State: StateLoading}}, nil
}
func (c *fakeCore) ModelMetadata(_ context.Context, m, v string) (*ModelMetadata, error) {
	if _, ok := failures[m]; ok {
		md := *mlpMetadata
		md.Name = m
		return &md, nil
	}
	if m != "mlp" || (v != "" && v != "1") {
		return nil, fmt.Errorf("%w: %q version %q", ErrModelNotFound, m, v)
	}
	return mlpMetadata, nil
}
func (c *fakeCore) ModelReady(ctx context.Context, m, v string) (bool, error) {
	if _, err := c.ModelMetadata(ctx, m, v); err != nil {
		return false, err
	}
	return m != "cold", nil
}
func (c *fakeCore) Infer(_ context.Context, call *Call) (*InferenceResponse, error) {
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
	if err, ok := failures[call.Model]; ok {
		return nil, err
	}
	in := call.Request.Inputs[0]
	rows := in.Shape[0]
	probs := make([]float32, 2*rows)
	labels := make([]int64, rows)
	for r := range rows {
		probs[2*r] = in.FP32[4*r]
		probs[2*r+1] = 1 - in.FP32[4*r]
		labels[r] = r
	}
	return &InferenceResponse{ServiceTime: 1234 * time.Microsecond, Outputs: []Tensor{
		NewFP32("probs", []int64{rows, 2}, probs),
		{Name: "label", Datatype: DatatypeINT64, Shape: []int64{rows}, INT64: labels},
	}}, nil
}

var _ Core = (*fakeCore)(nil)

func newTestServer(t *testing.T, opts HandlerOptions) (*httptest.Server, *fakeCore) {
	t.Helper()
	core := &fakeCore{ready: true}
	h, err := NewHandler(core, opts)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, core
}

const goodBody = `{"id":"q1","inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"data":[0.25,0,0,0]}]}`

func TestHandlerErrors(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxBodyBytes = 1024
	srv, _ := newTestServer(t, HandlerOptions{Limits: lim})
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		wantCode                 int
		wantMsg                  string
		wantRetryAfter           string
	}{
		{"malformed json", "POST", "/v2/models/mlp/infer", `{"inputs":[`, nil, 400, "invalid JSON", ""},
		{"unknown field", "POST", "/v2/models/mlp/infer", `{"inputs":[],"input":1}`, nil, 400, `unknown field "input"`, ""},
		{"wrong datatype", "POST", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"INT64","shape":[1,4],"data":[1,2,3,4]}]}`, nil, 400, "datatype INT64, model \"mlp\" expects FP32", ""},
		{"unsupported datatype", "POST", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"UINT8","shape":[1,4],"data":[1,2,3,4]}]}`, nil, 400, "unsupported datatype", ""},
		{"wrong shape", "POST", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"FP32","shape":[2,2],"data":[1,2,3,4]}]}`, nil, 400, "shape [2 2], model \"mlp\" expects [-1 4]", ""},
		{"wrong rank", "POST", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"FP32","shape":[4],"data":[1,2,3,4]}]}`, nil, 400, "expects [-1 4]", ""},
		{"element count mismatch", "POST", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"data":[1,2,3]}]}`, nil, 400, "data has 3 elements, shape [1 4] needs 4", ""},
		{"unknown input", "POST", "/v2/models/mlp/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}`, nil, 400, `no such input`, ""},
		{"unknown output", "POST", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}],"outputs":[{"name":"z"}]}`, nil, 400, `requested output "z"`, ""},
		{"bad timeout", "POST", "/v2/models/mlp/infer", `{"parameters":{"timeout":-5},"inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}`, nil, 400, `"timeout" must be a positive`, ""},
		{"bad binary header", "POST", "/v2/models/mlp/infer", goodBody, map[string]string{"Inference-Header-Content-Length": "x"}, 400, "is not a length", ""},
		{"binary header beyond body", "POST", "/v2/models/mlp/infer", goodBody, map[string]string{"Inference-Header-Content-Length": "1000"}, 400, "outside the", ""},
		{"unknown model", "POST", "/v2/models/nope/infer", goodBody, nil, 404, "model not found", ""},
		{"unknown version", "POST", "/v2/models/mlp/versions/7/infer", goodBody, nil, 404, "model not found", ""},
		{"unknown model metadata", "GET", "/v2/models/nope", "", nil, 404, "model not found", ""},
		{"body over limit", "POST", "/v2/models/mlp/infer", `{"id":"` + strings.Repeat("x", 2000) + `"}`, nil, 413, "limit 1024", ""},
		{"overloaded", "POST", "/v2/models/busy/infer", goodBody, nil, 429, "queue full", "3"},
		{"unavailable", "POST", "/v2/models/cold/infer", goodBody, nil, 503, "loading", "1"},
		{"model not ready", "GET", "/v2/models/cold/ready", "", nil, 400, "not ready", ""},
		{"deadline", "POST", "/v2/models/slow/infer", goodBody, nil, 504, "deadline exceeded", ""},
		{"deadline with a hint", "POST", "/v2/models/asleep/infer", goodBody, nil, 504, "cold start", "2"},
		{"internal", "POST", "/v2/models/broken/infer", goodBody, nil, 500, "segfault", ""},
		{"no endpoint", "GET", "/v2/nothing", "", nil, 404, "no endpoint GET /v2/nothing", ""},
		{"wrong method", "GET", "/v2/models/mlp/infer", "", nil, 405, "allowed: POST", ""},
		{"repository unknown field", "POST", "/v2/repository/index", `{"all":true}`, nil, 400, "unknown field", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, srv, tc.method, tc.path, tc.body, tc.header)
			body := readAll(t, res)
			if res.StatusCode != tc.wantCode {
				t.Fatalf("status (-want +got):\n- %d\n+ %d (%s)", tc.wantCode, res.StatusCode, body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var er ErrorResponse
			dec := json.NewDecoder(strings.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&er); err != nil || !strings.Contains(er.Error, tc.wantMsg) {
				t.Errorf("body = %s (%v), want {\"error\": ...%q...}", body, err, tc.wantMsg)
			}
			if got := res.Header.Get("Retry-After"); got != tc.wantRetryAfter {
				t.Errorf("Retry-After (-want +got):\n- %q\n+ %q", tc.wantRetryAfter, got)
			}
		})
	}
}

func TestHandlerInfer(t *testing.T) {
	var mu sync.Mutex
	var obs []Observation
	srv, core := newTestServer(t, HandlerOptions{Observe: func(o Observation) { mu.Lock(); obs = append(obs, o); mu.Unlock() }})
	body := `{"id":"q1","parameters":{"timeout":150000,"accuracy":0.9},"inputs":[{"name":"input","datatype":"FP32","shape":[2,4],"data":[[0.25,0,0,0],[1,0,0,0]]}],"outputs":[{"name":"probs"}]}`
	res := do(t, srv, "POST", "/v2/models/mlp/versions/1/infer", body, nil)
	got := readAll(t, res)
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, got)
	}
	want := `{"model_name":"mlp","model_version":"1","id":"q1","outputs":[{"name":"probs","datatype":"FP32","shape":[2,2],"data":[0.25,0.75,1,0]}]}`
	if got != want {
		t.Errorf("body (-want +got):\n- %s\n+ %s", want, got)
	}
	if st := res.Header.Get(HeaderServiceTime); st != "1234" {
		t.Errorf("%s (-want +got):\n- 1234\n+ %s", HeaderServiceTime, st)
	}
	call := core.calls[0]
	assertEqual(t, RequestSLO{Timeout: 150 * time.Millisecond, Accuracy: 0.9}, call.SLO)
	if call.Model != "mlp" || call.Version != "1" || call.Metadata != mlpMetadata || call.Arrival.IsZero() {
		t.Errorf("call = %+v, want model mlp version 1 with metadata and arrival", call)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(obs) != 1 || obs[0].Route != RouteInfer || obs[0].Code != 200 || obs[0].Rows != 2 || obs[0].Model != "mlp" {
		t.Errorf("observations = %+v, want one infer 200 of 2 rows", obs)
	}
}

func TestHandlerMetadataEndpoints(t *testing.T) {
	srv, core := newTestServer(t, HandlerOptions{})
	mdJSON, _ := json.Marshal(mlpMetadata)
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantBody                 string
	}{
		{"live", "GET", "/v2/health/live", "", 200, `{"live":true}`},
		{"ready", "GET", "/v2/health/ready", "", 200, `{"ready":true}`},
		{"server metadata", "GET", "/v2", "", 200, `{"name":"fake","version":"0.1","extensions":[]}`},
		{"model metadata", "GET", "/v2/models/mlp", "", 200, string(mdJSON)},
		{"model version metadata", "GET", "/v2/models/mlp/versions/1", "", 200, string(mdJSON)},
		{"model ready", "GET", "/v2/models/mlp/ready", "", 200, `{"name":"mlp","ready":true}`},
		{"model version ready", "GET", "/v2/models/mlp/versions/1/ready", "", 200, `{"name":"mlp","ready":true}`},
		{"index", "POST", "/v2/repository/index", "", 200, `[{"name":"mlp","version":"1","state":"READY"},{"name":"cold","state":"LOADING"}]`},
		{"index ready", "POST", "/v2/repository/index", `{"ready":true}`, 200, `[{"name":"mlp","version":"1","state":"READY"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, srv, tc.method, tc.path, tc.body, nil)
			got := strings.TrimSpace(readAll(t, res))
			if res.StatusCode != tc.wantCode || got != tc.wantBody {
				t.Errorf("answer (-want +got):\n- %d %s\n+ %d %s", tc.wantCode, tc.wantBody, res.StatusCode, got)
			}
		})
	}
	core.ready = false
	if res := do(t, srv, "GET", "/v2/health/ready", "", nil); res.StatusCode != 400 {
		t.Errorf("not ready: status = %d, want 400", res.StatusCode)
	}
}

func TestNewHandlerRejectsBadOptions(t *testing.T) {
	if _, err := NewHandler(nil, HandlerOptions{}); err == nil {
		t.Error("NewHandler(nil) succeeded")
	}
	if _, err := NewHandler(&fakeCore{}, HandlerOptions{Limits: Limits{MaxTensorElements: -1}}); err == nil || !strings.Contains(err.Error(), "max_tensor_elements: must be > 0, got -1") {
		t.Errorf("NewHandler with bad limits: err = %v, want one naming max_tensor_elements", err)
	}
}

func do(t *testing.T, srv *httptest.Server, method, path, body string, header map[string]string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
