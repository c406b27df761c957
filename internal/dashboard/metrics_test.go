package dashboard

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// gatewayMetrics registers the gateway's metric names and buckets (internal/gateway/metrics/metrics.go).
type gatewayMetrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	batch     *prometheus.HistogramVec
	instances *prometheus.GaugeVec
}

func newGatewayMetrics(t *testing.T) *gatewayMetrics {
	t.Helper()
	g := &gatewayMetrics{
		reg:      prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricRequests}, []string{"model", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricDuration,
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5}}, []string{"model"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricBatchSize,
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}}, []string{"model"}),
		instances: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricInstances}, []string{"model", "state"}),
	}
	for _, c := range []prometheus.Collector{g.requests, g.duration, g.batch, g.instances} {
		g.reg.MustRegister(c)
	}
	return g
}

func (g *gatewayMetrics) answer(model, outcome string, n int, latency time.Duration) {
	for range n {
		g.requests.WithLabelValues(model, outcome).Inc()
		g.duration.WithLabelValues(model).Observe(latency.Seconds())
	}
}

func (g *gatewayMetrics) batches(model string, n, size int) {
	for range n {
		g.batch.WithLabelValues(model).Observe(float64(size))
	}
}

func TestMetricsSource(t *testing.T) {
	g := newGatewayMetrics(t)
	src, err := NewMetricsSource(g.reg, MetricsOptions{
		Window: 10 * time.Second,
		SLO:    func(string) slo.Spec { return slo.Spec{Threshold: 200 * time.Millisecond, Target: 0.98} },
	})
	if err != nil {
		t.Fatal(err)
	}
	g.instances.WithLabelValues("m", "ready").Set(3)
	g.instances.WithLabelValues("m", "draining").Set(1)
	g.answer("m", "ok", 1, 30*time.Millisecond) // before the first sample: not in any window

	first, err := src.Sample(t.Context(), t0)
	if err != nil {
		t.Fatal(err)
	}
	wantInst := []InstanceCount{
		{Type: "gateway", Tier: provider.TierVM, State: provider.StateReady, Count: 3},
		{Type: "gateway", Tier: provider.TierVM, State: provider.StateDraining, Count: 1},
	}
	if len(first) != 1 || !math.IsNaN(first[0].ArrivalRate) || diffJSON(wantInst, first[0].Instances) != "" {
		t.Fatalf("first sample = %+v; want model m, unknown rate, instances %+v", first, wantInst)
	}

	// 10 s later: 100 fast ok answers, 5 slow ok ones and 5 slow timeouts; 10 batches of 8 and
	// 5 of 4.
	g.answer("m", "ok", 100, 30*time.Millisecond)
	g.answer("m", "ok", 5, 300*time.Millisecond)
	g.answer("m", "timeout", 5, 300*time.Millisecond)
	g.batches("m", 10, 8)
	g.batches("m", 5, 4)
	got, err := src.Sample(t.Context(), t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := got[0]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"arrival rate (1/s)", m.ArrivalRate, 11},
		{"attainment", m.Attainment, 100.0 / 110},
		{"batch mean", m.BatchMean, 100.0 / 15},
		{"batch max", m.BatchMax, 8},
		// p50: rank 55 of 110, all 100 fast ones in (20 ms, 50 ms]: 20 + 30·55/100 ms.
		{"p50 (ms)", millis(m.Latency.P50), 36.5},
		// p95: rank 104.5, in (200 ms, 500 ms] which holds 10: 200 + 300·4.5/10 ms.
		{"p95 (ms)", millis(m.Latency.P95), 335},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !math.IsNaN(m.Forecast) || !math.IsNaN(m.Cost.Total) {
		t.Errorf("forecast %v, cost %v; want NaN (the metrics carry neither)", m.Forecast, m.Cost.Total)
	}

	// Quiet for 20 s: the window slides past the burst.
	src.Sample(t.Context(), t0.Add(20*time.Second))
	got, _ = src.Sample(t.Context(), t0.Add(30*time.Second))
	if got[0].ArrivalRate != 0 || !math.IsNaN(got[0].Attainment) || got[0].Latency != (Latency{}) {
		t.Errorf("after a quiet window: rate %v, attainment %v, latency %+v; want 0, NaN, zero",
			got[0].ArrivalRate, got[0].Attainment, got[0].Latency)
	}
	if n := len(src.hist); n > 3 {
		t.Errorf("kept %d readings for a 10 s window sampled every 10 s, want <= 3", n)
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := histogram{bounds: []float64{1, 2, 4}, counts: []float64{10, 10, 30}, count: 40}
	tests := []struct {
		q, want float64
	}{
		{0, 0}, {0.25, 1}, {0.5, 3}, {0.75, 4}, {1, 4}, // 10 observations lie past the last bound
	}
	for _, tc := range tests {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := (histogram{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("quantile of an empty histogram = %v, want NaN", got)
	}
	if got, want := h.countBelow(3), 20.0; got != want {
		t.Errorf("countBelow(3) = %v, want %v", got, want)
	}
	if got, want := h.countBelow(1.5), 10.0; got != want {
		t.Errorf("countBelow(1.5) = %v, want %v (the (1, 2] bucket is empty)", got, want)
	}
}
