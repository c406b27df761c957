package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/slo"
)

// metrics are the gateway's Prometheus metrics, registered on the injected Registerer.
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *modelHistograms // SLOBuckets of each model's threshold (metrics_slo.go)
	batchSize *prometheus.HistogramVec
	queue     *prometheus.GaugeVec
	instances *prometheus.GaugeVec
	slo       *sloMetrics
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sloserve_requests_total",
			Help: "Inference requests answered by the gateway, by model and outcome.",
		}, []string{"model", "outcome"}),
		duration: newModelHistograms("sloserve_request_duration_seconds",
			"Time from a successful (200) request's arrival at the gateway to its answer, by model (buckets aligned to the model's SLO threshold); failures are counted in sloserve_requests_total by outcome."),
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
		slo: newSLOMetrics(),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range append([]prometheus.Collector{m.requests, m.duration, m.batchSize, m.queue, m.instances}, m.slo.collectors()...) {
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
	queueWait prometheus.Observer
	backend   prometheus.Observer
	slo       *sloWindow
	tstats    tritonStats // Triton's statistics (ModelStatistics)
}

func (m *metrics) forModel(model string, spec slo.Spec) *modelMetrics {
	mm := &modelMetrics{
		outcome:   make(map[string]prometheus.Counter, len(outcomes)),
		duration:  m.duration.forModel(model, spec.Threshold),
		queueWait: m.slo.queueWait.forModel(model, spec.Threshold),
		backend:   m.slo.backend.forModel(model, spec.Threshold),
		slo:       m.slo.window(model, spec.Threshold, spec.Target),
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
