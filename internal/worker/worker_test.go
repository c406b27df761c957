package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/oip"
)

// fakeRunner is a hand-written models.Runner: for input [rows, 4] it returns "probs" [rows, 2]
// holding (row sum, -row sum). When gate is set, Run signals started and waits for gate.
type fakeRunner struct {
	err     error
	started chan struct{}
	gate    chan struct{}
	closed  atomic.Bool
	calls   atomic.Int64
}

func (f *fakeRunner) Run(ctx context.Context, in []models.Tensor) ([]models.Tensor, error) {
	f.calls.Add(1)
	if f.gate != nil {
		f.started <- struct{}{}
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	rows := in[0].Shape[0]
	out := make([]float32, 2*rows)
	for r := range rows {
		var s float32
		for _, v := range in[0].Data[4*r : 4*r+4] {
			s += v
		}
		out[2*r], out[2*r+1] = s, -s
	}
	return []models.Tensor{{Shape: []int64{rows, 2}, Data: out}}, nil
}

// wrongShape is a runner that answers with one row too few.
type wrongShape struct{ fakeRunner }

func (w *wrongShape) Run(ctx context.Context, in []models.Tensor) ([]models.Tensor, error) {
	return []models.Tensor{{Shape: []int64{1, 2}, Data: []float32{1, 2}}}, nil
}

func (f *fakeRunner) Close() error { f.closed.Store(true); return nil }

var _ models.Runner = (*fakeRunner)(nil)

func fakeModel(name string, r models.Runner) Model {
	return FromRunner(name, r, models.Metadata{Name: name,
		Inputs:  []models.TensorInfo{{Name: "input", Datatype: "FP32", Shape: []int64{-1, 4}}},
		Outputs: []models.TensorInfo{{Name: "probs", Datatype: "FP32", Shape: []int64{-1, 2}}}})
}

// stepClock advances 250 µs on every reading, so a batch's measured service time is exactly 250 µs.
type stepClock struct{ n atomic.Int64 }

func (c *stepClock) Now() time.Time {
	return time.Unix(1e9, 0).Add(time.Duration(c.n.Add(1)) * 250 * time.Microsecond)
}

func newTestWorker(t *testing.T, cfg Config, ms ...Model) (*Worker, *httptest.Server) {
	t.Helper()
	clk := &stepClock{}
	w, err := New(cfg, ms, Deps{Now: clk.Now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	srv := httptest.NewServer(w.Handler())
	t.Cleanup(srv.Close)
	return w, srv
}

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const twoRows = `{"id":"b1","inputs":[{"name":"input","datatype":"FP32","shape":[2,4],"data":[1,2,3,4,0.5,0.5,0,0]}]}`

func TestWorkerInfer(t *testing.T) {
	w, srv := newTestWorker(t, DefaultConfig(), fakeModel("mlp", &fakeRunner{}))
	res, body := post(t, srv.URL+"/v2/models/mlp/infer", twoRows)
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	want := `{"model_name":"mlp","model_version":"1","id":"b1","outputs":[{"name":"probs","datatype":"FP32","shape":[2,2],"data":[10,-10,1,-1]}]}`
	if body != want {
		t.Errorf("body (-want +got):\n- %s\n+ %s", want, body)
	}
	if got := res.Header.Get(oip.HeaderServiceTime); got != "250" {
		t.Errorf("%s (-want +got):\n- 250\n+ %s", oip.HeaderServiceTime, got)
	}
	post(t, srv.URL+"/v2/models/nope/infer", twoRows)
	post(t, srv.URL+"/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"FP32","shape":[1,3],"data":[1,2,3]}]}`)
	code, metrics := get(t, srv.URL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics status %d", code)
	}
	for _, line := range []string{
		`sloserve_worker_requests_total{code="200",model="mlp"} 1`,
		`sloserve_worker_requests_total{code="400",model="mlp"} 1`,
		`sloserve_worker_requests_total{code="404",model="_unknown"} 1`,
		`sloserve_worker_batch_size_sum{model="mlp"} 2`,
		`sloserve_worker_batch_seconds_sum{model="mlp"} 0.00025`,
		`sloserve_worker_batch_seconds_count{model="mlp"} 1`,
		`sloserve_worker_batches_in_flight 0`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if code, _ := get(t, srv.URL+"/v2/health/ready"); code != 400 { // not ready: 400, as Triton answers
		t.Errorf("ready after Close: status %d, want 400", code)
	}
}

func TestWorkerErrors(t *testing.T) {
	badInput := &fakeRunner{err: fmt.Errorf("%w: odd rows", models.ErrBadInput)}
	crash := &fakeRunner{err: errors.New("kernel crashed")}
	_, srv := newTestWorker(t, DefaultConfig(), fakeModel("mlp", &fakeRunner{}), fakeModel("picky", badInput), fakeModel("crash", crash), fakeModel("short", &wrongShape{}))
	tests := []struct {
		name, path, body string
		wantCode         int
		wantMsg          string
	}{
		{"runner bad input", "/v2/models/picky/infer", twoRows, 400, "odd rows"},
		{"runner failure", "/v2/models/crash/infer", twoRows, 500, "kernel crashed"},
		{"runner output shape", "/v2/models/short/infer", twoRows, 500, "metadata says [-1 2] with 2 rows"},
		{"expired timeout", "/v2/models/mlp/infer", `{"parameters":{"timeout":1},"inputs":[{"name":"input","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}`, 504, "timeout of 1µs passed"},
		{"empty batch", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"FP32","shape":[0,4],"data":[]}]}`, 400, "empty batch"},
		{"wrong version", "/v2/models/mlp/versions/2/infer", twoRows, 404, `serving version 1`},
		{"wrong shape", "/v2/models/mlp/infer", `{"inputs":[{"name":"input","datatype":"FP32","shape":[1,2,2],"data":[1,2,3,4]}]}`, 400, "expects [-1 4]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := post(t, srv.URL+tc.path, tc.body)
			if res.StatusCode != tc.wantCode || !strings.Contains(body, tc.wantMsg) {
				t.Errorf("answer (-want +got):\n- %d ...%s...\n+ %d %s", tc.wantCode, tc.wantMsg, res.StatusCode, body)
			}
		})
	}
}

func TestWorkerMetadata(t *testing.T) {
	_, srv := newTestWorker(t, DefaultConfig(), fakeModel("a", &fakeRunner{}), fakeModel("b", &fakeRunner{}))
	tests := []struct{ path, want string }{
		{"/v2", `{"name":"sloserve-worker","version":"dev","extensions":["model_repository"]}`},
		{"/v2/models/a", `{"name":"a","versions":["1"],"platform":"onnx","inputs":[{"name":"input","datatype":"FP32","shape":[-1,4]}],"outputs":[{"name":"probs","datatype":"FP32","shape":[-1,2]}]}`},
		{"/v2/models/b/versions/1/ready", `{"name":"b","ready":true}`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			code, body := get(t, srv.URL+tc.path)
			if code != 200 || strings.TrimSpace(body) != tc.want {
				t.Errorf("GET %s (-want +got):\n- 200 %s\n+ %d %s", tc.path, tc.want, code, body)
			}
		})
	}
	c, err := oip.NewClient(srv.URL, oip.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.Models(context.Background(), false)
	want := []oip.RepositoryIndexEntry{{Name: "a", Version: "1", State: "READY"}, {Name: "b", Version: "1", State: "READY"}}
	if err != nil || !slices.Equal(list, want) {
		t.Errorf("Models (-want +got):\n- %v\n+ %v (%v)", want, list, err)
	}
}

func TestWorkerMaxInFlight(t *testing.T) {
	r := &fakeRunner{started: make(chan struct{}, 1), gate: make(chan struct{})}
	cfg := DefaultConfig()
	cfg.MaxInFlight = 1
	cfg.RetryAfter = 2 * time.Second
	_, srv := newTestWorker(t, cfg, fakeModel("mlp", r))
	first := make(chan int, 1)
	go func() {
		res, err := http.Post(srv.URL+"/v2/models/mlp/infer", "application/json", strings.NewReader(twoRows))
		if err != nil {
			first <- -1
			return
		}
		res.Body.Close()
		first <- res.StatusCode
	}()
	<-r.started
	res, body := post(t, srv.URL+"/v2/models/mlp/infer", twoRows)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "2" {
		t.Errorf("second request: %d Retry-After %q %s, want 429 with Retry-After 2", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	close(r.gate)
	if code := <-first; code != 200 {
		t.Errorf("first request: status %d, want 200", code)
	}
}

// TestWorkerGracefulShutdown cancels Serve while a batch runs: the batch completes, readiness
// turns false during the drain, and Serve returns nil.
func TestWorkerGracefulShutdown(t *testing.T) {
	r := &fakeRunner{started: make(chan struct{}, 1), gate: make(chan struct{})}
	draining := make(chan struct{})
	w, err := New(DefaultConfig(), []Model{fakeModel("mlp", r)}, Deps{Logger: slog.New(&signalHandler{msg: "worker draining", ch: draining})})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- w.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	c, _ := oip.NewClient(url, oip.ClientOptions{})
	if err := c.Ready(context.Background()); err != nil {
		t.Fatalf("Ready before shutdown: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Infer(context.Background(), "mlp", "", &oip.InferenceRequest{Inputs: []oip.Tensor{oip.NewFP32("input", []int64{1, 4}, []float32{1, 1, 1, 1})}})
		done <- err
	}()
	<-r.started
	cancel()
	<-draining // Serve logs this just before http.Server.Shutdown
	if w.Ready(context.Background()) {
		t.Error("Ready while draining = true, want false")
	}
	close(r.gate)
	if err := <-done; err != nil {
		t.Errorf("in-flight request during shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// signalHandler is a slog.Handler that closes ch when a record with message msg is logged.
type signalHandler struct {
	msg  string
	ch   chan struct{}
	once atomic.Bool
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg && h.once.CompareAndSwap(false, true) {
		close(h.ch)
	}
	return nil
}
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *signalHandler) WithGroup(string) slog.Handler      { return h }

func TestNewRejects(t *testing.T) {
	bad := DefaultConfig()
	bad.WriteTimeout = 0
	tests := []struct {
		name string
		cfg  Config
		ms   []Model
		want string
	}{
		{"bad config", bad, []Model{fakeModel("a", &fakeRunner{})}, "worker.write_timeout: must be > 0, got 0s"},
		{"no models", DefaultConfig(), nil, "no models"},
		{"repeated", DefaultConfig(), []Model{fakeModel("a", &fakeRunner{}), fakeModel("a", &fakeRunner{})}, "repeated"},
		{"non-fp32", DefaultConfig(), []Model{{Name: "x", Runner: &fakeRunner{}, Inputs: []oip.TensorMetadata{{Name: "i", Datatype: "INT64", Shape: []int64{-1}}}, Outputs: []oip.TensorMetadata{{Name: "o", Datatype: "FP32", Shape: []int64{-1}}}}}, "only FP32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg, tc.ms, Deps{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error = %v, want %q", err, tc.want)
			}
		})
	}
}

// fakeCatalog is a hand-written Catalog of fake models.
type fakeCatalog struct{ names []string }

func (c fakeCatalog) Names() []string { return c.names }
func (c fakeCatalog) Open(name string, opts models.Options) (models.Runner, models.Metadata, error) {
	m := fakeModel(opts.Name, &fakeRunner{})
	return m.Runner, models.Metadata{Name: name,
		Inputs:  []models.TensorInfo{{Name: "input", Datatype: "FP32", Shape: []int64{-1, 4}}},
		Outputs: []models.TensorInfo{{Name: "probs", Datatype: "FP32", Shape: []int64{-1, 2}}}}, nil
}

func TestLoad(t *testing.T) {
	cat := fakeCatalog{names: []string{"small", "large"}}
	tests := []struct {
		name    string
		cfg     LoadConfig
		want    []string
		wantErr string
	}{
		{"all bundled", LoadConfig{}, []string{"small", "large"}, ""},
		{"chosen", LoadConfig{Names: []string{"large"}}, []string{"large"}, ""},
		{"unknown", LoadConfig{Names: []string{"huge"}}, nil, `no model "huge"`},
		{"repeated", LoadConfig{Names: []string{"small", "small"}}, nil, "repeated"},
		{"empty dir", LoadConfig{Dir: t.TempDir()}, nil, "no *.onnx files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := Load(cat, tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("loaded (-want +got):\n- %v\n+ %v", tc.want, got)
			}
		})
	}
}
