package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus metrics, registered on the injected Registerer.
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	batchSize *prometheus.HistogramVec
	queue     *prometheus.GaugeVec
	instances *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sloserve_requests_total",
			Help: "Inference requests answered by the gateway, by model and outcome.",
		}, []string{"model", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sloserve_request_duration_seconds",
			Help:    "Time from a request's arrival at the gateway to its answer, by model.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5},
		}, []string{"model"}),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sloserve_batch_size",
			Help:    "Requests per batch sent to an instance, by model.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
		}, []string{"model"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sloserve_queue_depth",
			Help: "Requests waiting in the model's batch queue.",
		}, []string{"model"}),
		instances: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sloserve_instances",
			Help: "Instances known to the gateway, by model and state.",
		}, []string{"model", "state"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.batchSize, m.queue, m.instances} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// modelMetrics are one model's curried metrics, looked up once so the hot path does not hash labels.
type modelMetrics struct {
	outcome   map[string]prometheus.Counter
	duration  prometheus.Observer
	batchSize prometheus.Observer
	queue     prometheus.Gauge
	ready     prometheus.Gauge
	draining  prometheus.Gauge
}

func (m *metrics) forModel(model string) *modelMetrics {
	mm := &modelMetrics{
		outcome:   make(map[string]prometheus.Counter, len(outcomes)),
		duration:  m.duration.WithLabelValues(model),
		batchSize: m.batchSize.WithLabelValues(model),
		queue:     m.queue.WithLabelValues(model),
		ready:     m.instances.WithLabelValues(model, "ready"),
		draining:  m.instances.WithLabelValues(model, "draining"),
	}
	for _, o := range outcomes {
		mm.outcome[o] = m.requests.WithLabelValues(model, o)
	}
	return mm
}
