package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sloserve/sloserve/internal/gateway/metrics"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// blockingWorker is an OIP v2 worker for model "m" whose inference waits until the request is
// canceled or release is closed, then answers the sum like sumWorker.
func blockingWorker(t *testing.T, release chan struct{}) *httptest.Server {
	t.Helper()
	sum := sumWorker(t)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, sum.URL+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestMetricsQueueBackendCanceled serves real requests through the gateway's handler to a real
// loopback worker and checks the split histograms, the SLO series and that a client that goes
// away is counted as canceled, not as a bad request.
func TestMetricsQueueBackendCanceled(t *testing.T) {
	release := make(chan struct{})
	w := blockingWorker(t, release)
	reg := prometheus.NewRegistry()
	g, err := New(Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	spec := slo.Spec{Threshold: 2 * time.Second, Target: 0.99}
	if err := g.AddModel(Model{Name: "m", SLO: spec, Policy: &fixedPolicy{Max: 1}, QueueLimit: 64}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddInstance(context.Background(), "m", Instance{ID: "w0", Addr: w.URL}); err != nil {
		t.Fatal(err)
	}
	h, err := g.Handler(HandlerOptions{Gatherer: reg, OIP: oip.HandlerOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(func() { s.Close(); g.Close(context.Background()) })

	// A client that gives up while its request waits in the queue: the model's metadata is
	// known (learnt from w0) but it has no instance, so the request waits for one.
	if err := g.RemoveInstance(context.Background(), "m", "w0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/v2/models/m/infer", bytes.NewReader(body("c", 1, "")))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("canceled request answered %s", resp.Status)
	}
	cancel()
	// The server notices the client's disconnect asynchronously: wait for it (the request is
	// then answered as canceled and leaves the queue) before an instance could take it.
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(g.metrics.Requests("m", metrics.OutcomeCanceled)) != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if err := g.AddInstance(context.Background(), "m", Instance{ID: "w1", Addr: w.URL}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		resp, err := http.Post(s.URL+"/v2/models/m/infer", "application/json", bytes.NewReader(body(fmt.Sprint("a", i), 1, "")))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %s %s", i, resp.Status, msg)
		}
	}
	for _, tc := range []struct {
		outcome string
		want    float64
	}{{metrics.OutcomeCanceled, 1}, {metrics.OutcomeBadRequest, 0}, {metrics.OutcomeOK, 3}} {
		if got := testutil.ToFloat64(g.metrics.Requests("m", tc.outcome)); got != tc.want {
			t.Errorf("sloserve_requests_total{outcome=%q} = %v, want %v", tc.outcome, got, tc.want)
		}
	}
	want := `
# HELP sloserve_slo_requests_total SLO-eligible inference requests answered (all but client errors and cancellations), by model.
# TYPE sloserve_slo_requests_total counter
sloserve_slo_requests_total{model="m"} 3
# HELP sloserve_slo_violations_total SLO-eligible inference requests that failed, were refused or timed out, or succeeded later than the threshold, by model.
# TYPE sloserve_slo_violations_total counter
sloserve_slo_violations_total{model="m"} 0
# HELP sloserve_slo_attainment_ratio Fraction of the model's SLO-eligible requests (all but client errors and cancellations) answered 200 within the threshold over the last 5 minutes; 1 when there were none.
# TYPE sloserve_slo_attainment_ratio gauge
sloserve_slo_attainment_ratio{model="m"} 1
# HELP sloserve_slo_target_ratio The model's SLO target: the fraction of requests that must meet the threshold.
# TYPE sloserve_slo_target_ratio gauge
sloserve_slo_target_ratio{model="m"} 0.99
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sloserve_slo_requests_total", "sloserve_slo_violations_total",
		"sloserve_slo_attainment_ratio", "sloserve_slo_target_ratio"); err != nil {
		t.Error(err)
	}
	// Every answered request is observed in the queue-wait, backend and duration histograms,
	// with the SLO-aligned buckets. The batch's queue-wait and backend times are observed by
	// the batcher once the batch's answers are handed out, so the last one may land just after
	// the client has read its answer: wait for it (bounded).
	hist := func(name string) (n uint64, bounds int) {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				n = mf.Metric[0].GetHistogram().GetSampleCount()
				bounds = len(mf.Metric[0].GetHistogram().GetBucket())
			}
		}
		return n, bounds
	}
	for _, name := range []string{"sloserve_queue_wait_seconds", "sloserve_backend_seconds", "sloserve_request_duration_seconds"} {
		n, bounds := hist(name)
		for deadline := time.Now().Add(5 * time.Second); n < 3 && time.Now().Before(deadline); n, bounds = hist(name) {
			time.Sleep(10 * time.Millisecond)
		}
		if n != 3 || bounds != len(metrics.SLOBuckets(spec.Threshold)) {
			t.Errorf("%s: %d observations and %d buckets, want 3 and %d", name, n, bounds, len(metrics.SLOBuckets(spec.Threshold)))
		}
	}
}
