package worker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the worker's Prometheus metrics, registered on the injected Registerer.
type metrics struct {
	batchSeconds *prometheus.HistogramVec
	batchSize    *prometheus.HistogramVec
	requests     *prometheus.CounterVec
	inFlight     prometheus.Gauge
}

// unknownModel is the model label of requests for models the worker does not serve, so that
// client input cannot grow the label set.
const unknownModel = "_unknown"

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		batchSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sloserve_worker_batch_seconds",
			Help: "Service time of one batch in the model runtime, by model.",
			// 10 µs … ~1.3 s: ONNX Runtime serves batch 1 of a small MLP in ~17 µs.
			Buckets: prometheus.ExponentialBuckets(10e-6, 2, 18),
		}, []string{"model"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sloserve_worker_batch_size",
			Help:    "Rows (requests merged by the gateway) per batch, by model.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}, []string{"model"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sloserve_worker_requests_total",
			Help: "Inference requests answered, by model and HTTP status code.",
		}, []string{"model", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sloserve_worker_batches_in_flight",
			Help: "Batches running in the model runtimes now.",
		}),
	}
	for _, c := range []prometheus.Collector{m.batchSeconds, m.batchSize, m.requests, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
