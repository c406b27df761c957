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

	"github.com/sloserve/sloserve/internal/slo"
)

// sumWorker is a tiny OIP v2 worker for model "m": input x [N,2] FP32, output y [N,1] = row sum.
func sumWorker(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/models/m", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"m","platform":"test","inputs":[{"name":"x","datatype":"FP32","shape":[-1,2]}],"outputs":[{"name":"y","datatype":"FP32","shape":[-1,1]}]}`)
	})
	mux.HandleFunc("POST /v2/models/m/infer", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     string `json:"id"`
			Inputs []struct {
				Shape []int64   `json:"shape"`
				Data  []float64 `json:"data"`
			} `json:"inputs"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Inputs) != 1 {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"bad input"}`)
			return
		}
		in := req.Inputs[0]
		n := int(in.Shape[0])
		out := make([]float64, n)
		for i := range n {
			out[i] = in.Data[2*i] + in.Data[2*i+1]
		}
		data, _ := json.Marshal(out)
		w.Header().Set(ServiceTimeHeader, "250")
		fmt.Fprintf(w, `{"model_name":"m","id":%q,"outputs":[{"name":"y","datatype":"FP32","shape":[%d,1],"data":%s}]}`, req.ID, n, data)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func newHTTPGateway(t *testing.T, pol *fixedPolicy, worker string) (*Gateway, *httptest.Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	g, err := New(Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: pol, QueueLimit: 64}); err != nil {
		t.Fatal(err)
	}
	if worker != "" {
		if err := g.AddInstance(context.Background(), "m", Instance{ID: "w0", Addr: worker}); err != nil {
			t.Fatal(err)
		}
	}
	s := httptest.NewServer(g.Handler(HandlerOptions{Gatherer: reg, MaxBodyBytes: 4096}))
	t.Cleanup(func() { s.Close(); g.Close(context.Background()) })
	return g, s, reg
}

func TestHTTPBadInput(t *testing.T) {
	w := sumWorker(t)
	_, s, _ := newHTTPGateway(t, &fixedPolicy{max: 1}, w.URL)
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantErr                  string // substring of the JSON "error"
	}{
		{"ok", "POST", "/v2/models/m/infer", string(body("a", 1, "")), 200, ""},
		{"ok versioned path", "POST", "/v2/models/m/versions/1/infer", string(body("a", 2, "")), 200, ""},
		{"malformed JSON", "POST", "/v2/models/m/infer", `{"inputs":[`, 400, "decode body"},
		{"empty body", "POST", "/v2/models/m/infer", ``, 400, "decode body"},
		{"no inputs", "POST", "/v2/models/m/infer", `{"inputs":[]}`, 400, "inputs: at least one"},
		{"unknown model", "POST", "/v2/models/nope/infer", string(body("a", 1, "")), 404, "model not found"},
		{"wrong input name", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"z","datatype":"FP32","shape":[1,2],"data":[1,2]}]}`, 400, `no input "z"`},
		{"wrong datatype", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"INT64","shape":[1,2],"data":[1,2]}]}`, 400, "model wants FP32"},
		{"unsupported datatype", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"BYTES","shape":[1],"data":["a"]}]}`, 400, "unsupported"},
		{"wrong row shape", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`, 400, "model wants [-1 2]"},
		{"data count mismatch", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[1,2,3]}]}`, 400, "needs 4 elements, got 3"},
		{"zero dimension", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[0,2],"data":[]}]}`, 400, "shape[0]"},
		{"non-numeric data", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1,"b"]}]}`, 400, "not a number"},
		{"bad timeout", "POST", "/v2/models/m/infer", string(body("a", 1, `"parameters":{"timeout":-5},`)), 400, "parameters.timeout"},
		{"body too large", "POST", "/v2/models/m/infer", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1,2]}],"pad":"` + strings.Repeat("x", 5000) + `"}`, 400, "larger than 4096"},
		{"GET on infer", "GET", "/v2/models/m/infer", ``, 405, ""},
		{"unknown route", "GET", "/v3/x", ``, 404, "no route"},
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
	// Window long enough that all five requests (1..5 rows) form one batch.
	_, s, reg := newHTTPGateway(t, &fixedPolicy{max: 5, wait: time.Second}, w.URL)
	type got struct {
		status int
		batch  string
		svc    string
		out    []float64
		id     string
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
				ID      string `json:"id"`
				Outputs []struct {
					Shape []int64   `json:"shape"`
					Data  []float64 `json:"data"`
				} `json:"outputs"`
			}
			json.NewDecoder(resp.Body).Decode(&r)
			g := got{status: resp.StatusCode, batch: resp.Header.Get(BatchSizeHeader), svc: resp.Header.Get(ServiceTimeHeader), id: r.ID}
			if len(r.Outputs) == 1 {
				g.out = r.Outputs[0].Data
			}
			results[i] = g
		}()
	}
	wg.Wait()
	for i, r := range results {
		// body(id, rows) holds 0,1,2,...; row k sums to 4k+1.
		want := got{status: 200, batch: "5", svc: "250", id: fmt.Sprint("r", i)}
		for k := range i + 1 {
			want.out = append(want.out, float64(4*k+1))
		}
		if d := diff(want, r); d != "" {
			t.Errorf("request %d (-want +got):\n%s", i, d)
		}
	}
	mfs, _ := reg.Gather()
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"sloserve_requests_total", "sloserve_request_duration_seconds", "sloserve_batch_size", "sloserve_queue_depth", "sloserve_instances"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("metric %s not registered; have %v", want, names)
		}
	}
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(mb), `sloserve_requests_total{model="m",outcome="ok"} 5`) {
		t.Errorf("/metrics does not count 5 ok requests:\n%s", mb)
	}
}

func TestHTTPBackendDown(t *testing.T) {
	w := sumWorker(t)
	addr := w.URL
	_, s, _ := newHTTPGateway(t, &fixedPolicy{max: 1}, addr)
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

func TestHTTPHealth(t *testing.T) {
	_, s, _ := newHTTPGateway(t, &fixedPolicy{max: 1}, "")
	for _, tc := range []struct {
		path string
		want int
	}{{"/v2/health/live", 200}, {"/v2/health/ready", 503}, {"/v2/models/m/ready", 503}, {"/v2/models/m", 200}, {"/v2", 200}, {"/v2/models/x", 404}} {
		resp, err := http.Get(s.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s (-want +got): -%d +%d", tc.path, tc.want, resp.StatusCode)
		}
	}
}
