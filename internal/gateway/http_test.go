package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/gateway/gatewaytest"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// sumWorker is a tiny OIP v2 worker for model "m": input x [N,2] FP32, output y [N,1] = row sum.
func sumWorker(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(gatewaytest.SumWorker("1000", false))
	t.Cleanup(s.Close)
	return s
}

func newHTTPGateway(t *testing.T, pol *fixedPolicy, worker string) (*Gateway, *httptest.Server) {
	t.Helper()
	return newHTTPGatewaySLO(t, pol, worker, slo.DefaultSpec())
}

// newHTTPGatewaySLO is newHTTPGateway with model m's SLO spec.
func newHTTPGatewaySLO(t *testing.T, pol *fixedPolicy, worker string, spec slo.Spec) (*Gateway, *httptest.Server) {
	t.Helper()
	reg := prometheus.NewRegistry()
	g, err := New(Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: spec, Policy: pol, QueueLimit: 64}); err != nil {
		t.Fatal(err)
	}
	if worker != "" {
		if err := g.AddInstance(context.Background(), "m", Instance{ID: "w0", Addr: worker}); err != nil {
			t.Fatal(err)
		}
	}
	lim := oip.DefaultLimits()
	lim.MaxBodyBytes = 4096
	h, err := g.Handler(HandlerOptions{Gatherer: reg, OIP: oip.HandlerOptions{Limits: lim}})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(func() { s.Close(); g.Close(context.Background()) })
	return g, s
}

func TestHTTPBadInput(t *testing.T) {
	w := sumWorker(t)
	_, s := newHTTPGateway(t, &fixedPolicy{Max: 1}, w.URL)
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantErr                  string // substring of the JSON "error"
	}{
		{"ok", "POST", "/v2/models/m/infer", string(body("a", 1, "")), 200, ""},
		{"ok versioned path", "POST", "/v2/models/m/versions/1/infer", string(body("a", 2, "")), 200, ""},
		{"malformed JSON", "POST", "/v2/models/m/infer", `{"inputs":[`, 400, "bad request"},
		{"empty body", "POST", "/v2/models/m/infer", ``, 400, "bad request"},
		{"no inputs", "POST", "/v2/models/m/infer", `{"inputs":[]}`, 400, "missing inputs"},
		{"unknown model", "POST", "/v2/models/nope/infer", string(body("a", 1, "")), 404, "model not found"},
		{"wrong input name", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"z","datatype":"FP32","shape":[1,2],"data":[1,2]}]}`, 400, `"z"`},
		{"wrong datatype", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,2],"data":[1,2]}]}`, 400, "expects FP32"},
		{"unsupported datatype", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP16","shape":[1,2],"data":[1,2]}]}`, 400, "FP16"},
		{"wrong row shape", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`, 400, "expects [-1 2]"},
		{"data count mismatch", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[1,2,3]}]}`, 400, "bad request"},
		{"non-numeric data", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1,"b"]}]}`, 400, "bad request"},
		{"unknown output", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1,2]}],"outputs":[{"name":"q"}]}`, 400, `"q"`},
		{"bad timeout", "POST", "/v2/models/m/infer", string(body("a", 1, `"parameters":{"timeout":-5},`)), 400, "timeout"},
		{"body too large", "POST", "/v2/models/m/infer", `{"id":"` + strings.Repeat("x", 5000) + `"}`, 413, "too large"},
		{"GET on infer", "GET", "/v2/models/m/infer", ``, 405, "method not allowed"},
		{"unknown route", "GET", "/v3/x", ``, 404, "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, s.URL+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status (-want +got): -%d +%d; body %s", tc.wantStatus, resp.StatusCode, b)
			}
			if tc.wantErr == "" {
				return
			}
			var e struct{ Error string }
			if err := json.Unmarshal(b, &e); err != nil || !strings.Contains(e.Error, tc.wantErr) {
				t.Errorf("error body %s: want an \"error\" containing %q", b, tc.wantErr)
			}
		})
	}
}

func TestHTTPBatchSplitsRows(t *testing.T) {
	w := sumWorker(t)
	// A window long enough that all five requests (1..5 rows) form one batch.
	_, s := newHTTPGateway(t, &fixedPolicy{Max: 5, Wait: time.Minute}, w.URL)
	type got struct {
		Status int
		Svc    string
		Batch  float64
		ID     string
		Out    []float64
	}
	results := make([]got, 5)
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(s.URL+"/v2/models/m/infer", "application/json", bytes.NewReader(body(fmt.Sprint("r", i), i+1, "")))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var r struct {
				ID         string             `json:"id"`
				Parameters map[string]float64 `json:"parameters"`
				Outputs    []struct {
					Data []float64 `json:"data"`
				} `json:"outputs"`
			}
			json.NewDecoder(resp.Body).Decode(&r)
			g := got{Status: resp.StatusCode, Svc: resp.Header.Get(oip.HeaderServiceTime), ID: r.ID, Batch: r.Parameters[ParamBatchSize]}
			if len(r.Outputs) == 1 {
				g.Out = r.Outputs[0].Data
			}
			results[i] = g
		}()
	}
	wg.Wait()
	for i, r := range results {
		// body(id, rows) holds 0,1,2,...; row k sums to 4k+1. The 1000 µs batch is shared by 5.
		want := got{Status: 200, Svc: "200", Batch: 5, ID: fmt.Sprint("r", i)}
		for k := range i + 1 {
			want.Out = append(want.Out, float64(4*k+1))
		}
		if d := diff(want, r); d != "" {
			t.Errorf("request %d (-want +got):\n%s", i, d)
		}
	}
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`sloserve_requests_total{model="m",outcome="ok"} 5`,
		`sloserve_request_duration_seconds_count{model="m"} 5`,
		`sloserve_batch_size_sum{model="m"} 5`,
		`sloserve_queue_depth{model="m"} 0`,
		`sloserve_instances{model="m",state="ready"} 1`,
	} {
		if !strings.Contains(string(mb), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestHTTPBackendDown(t *testing.T) {
	w := sumWorker(t)
	_, s := newHTTPGateway(t, &fixedPolicy{Max: 1}, w.URL)
	w.Close()
	resp, err := http.Post(s.URL+"/v2/models/m/infer", "application/json", bytes.NewReader(body("a", 1, "")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("backend down: got status %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestHTTPBackendError502(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"name":"m","platform":"t","inputs":[{"name":"x","datatype":"FP32","shape":[-1,2]}],"outputs":[]}`)
			return
		}
		w.WriteHeader(500)
		io.WriteString(w, `{"error":"kaput"}`)
	}))
	defer bad.Close()
	_, s := newHTTPGateway(t, &fixedPolicy{Max: 1}, bad.URL)
	resp, err := http.Post(s.URL+"/v2/models/m/infer", "application/json", bytes.NewReader(body("a", 1, "")))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The instance's own text stays in the gateway's log: the client sees its status only.
	if resp.StatusCode != http.StatusBadGateway || strings.Contains(string(b), "kaput") || !strings.Contains(string(b), "HTTP 500") {
		t.Errorf("backend 500: got %d %s, want 502 with the instance's status and not its message", resp.StatusCode, b)
	}
}

func TestHTTPHealth(t *testing.T) {
	g, s := newHTTPGateway(t, &fixedPolicy{Max: 1}, "")
	check := func(path string, want int) {
		t.Helper()
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s (-want +got): -%d +%d", path, want, resp.StatusCode)
		}
	}
	check("/v2/health/live", 200)
	check("/v2/health/ready", 400)
	check("/v2/models/m/ready", 400)
	check("/v2/models/m", 503) // metadata not learnt yet
	check("/v2", 200)
	check("/v2/models/x", 404)
	w := sumWorker(t)
	if err := g.AddInstance(context.Background(), "m", Instance{ID: "w", Addr: w.URL}); err != nil {
		t.Fatal(err)
	}
	check("/v2/health/ready", 200)
	check("/v2/models/m", 200)
}

// TestHTTPChunkedBody: a body without Content-Length is read whole and forwarded as is.
func TestHTTPChunkedBody(t *testing.T) {
	w := sumWorker(t)
	_, s := newHTTPGateway(t, &fixedPolicy{Max: 1}, w.URL)
	pr, pw := io.Pipe()
	go func() {
		b := body("chunked", 2, "")
		pw.Write(b[:10])
		pw.Write(b[10:])
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v2/models/m/infer", pr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"data":[1,5]`)) || !bytes.Contains(b, []byte(`"id":"chunked"`)) {
		t.Errorf("chunked request: %d %s, want 200 with y = [1,5]", resp.StatusCode, b)
	}
}
