package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// metricsWorker serves model m's metadata and a /metrics with one counter of value v.
func metricsWorker(t *testing.T, v float64) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sloserve_worker_requests_total", Help: "h"}, []string{"model", "code"})
	c.WithLabelValues("m", "200").Add(v)
	reg.MustRegister(c)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/models/m", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"m","platform":"test","inputs":[{"name":"x","datatype":"FP32","shape":[-1,2]}],"outputs":[{"name":"y","datatype":"FP32","shape":[-1,1]}]}`)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestWorkersMetrics(t *testing.T) {
	w1, w2 := metricsWorker(t, 3), metricsWorker(t, 5)
	down := metricsWorker(t, 7)
	down.Close()
	reg := prometheus.NewRegistry()
	g, err := New(Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: &fixedPolicy{Max: 1}}); err != nil {
		t.Fatal(err)
	}
	for id, s := range map[string]*httptest.Server{"w1": w1, "w2": w2} {
		if err := g.AddInstance(context.Background(), "m", Instance{ID: id, Addr: s.URL}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.AddInstance(context.Background(), "m", Instance{ID: "w3", Addr: down.URL}); err != nil {
		t.Fatal(err)
	}
	h, err := g.Handler(HandlerOptions{Gatherer: reg, OIP: oip.HandlerOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(func() { s.Close(); g.Close(context.Background()) })
	resp, err := http.Get(s.URL + WorkersMetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s %s", WorkersMetricsPath, resp.Status, b)
	}
	for _, want := range []string{
		`sloserve_worker_requests_total{code="200",model="m",sloserve_model="m",worker="w1"} 3`,
		`sloserve_worker_requests_total{code="200",model="m",sloserve_model="m",worker="w2"} 5`,
		`sloserve_worker_up{sloserve_model="m",worker="w1"} 1`,
		`sloserve_worker_up{sloserve_model="m",worker="w2"} 1`,
		`sloserve_worker_up{sloserve_model="m",worker="w3"} 0`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s; got:\n%s", WorkersMetricsPath, want, b)
		}
	}
}
