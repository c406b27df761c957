package gateway

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/telemetry"
)

// TestTraceparentReachesWorker sends a request with a W3C traceparent through the gateway's
// handler (with telemetry.Middleware, no exporter) and checks that the worker's batch request
// carries the same trace id.
func TestTraceparentReachesWorker(t *testing.T) {
	sum := sumWorker(t)
	var mu sync.Mutex
	var seen []string
	w := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			seen = append(seen, r.Header.Get("traceparent"))
			mu.Unlock()
		}
		sum.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(w.Close)
	tr, err := telemetry.NewTracing(context.Background(), "test", "")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	g, err := New(Options{Registerer: reg, Backend: NewOIPBackend(oip.ClientOptions{HTTPClient: &http.Client{Transport: tr.Transport(oip.NewTransport())}})})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: &fixedPolicy{Max: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddInstance(context.Background(), "m", Instance{ID: "w0", Addr: w.URL}); err != nil {
		t.Fatal(err)
	}
	h, err := g.Handler(HandlerOptions{Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(telemetry.Middleware(h, telemetry.AccessLogOptions{Tracing: tr, Route: routeOf}))
	t.Cleanup(func() { s.Close(); g.Close(context.Background()) })

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", s.URL+"/v2/models/m/infer", bytes.NewReader(body("a", 1, "")))
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(telemetry.HeaderRequestID) == "" {
		t.Fatalf("answer %s, request id %q", resp.Status, resp.Header.Get(telemetry.HeaderRequestID))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || !strings.HasPrefix(seen[0], "00-"+traceID+"-") {
		t.Errorf("worker saw traceparent %q, want trace id %s", seen, traceID)
	}
}
