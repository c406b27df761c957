package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// Set is the gateway's Prometheus metrics, registered on the injected Registerer.
type Set struct {
	requests  *prometheus.CounterVec
	duration  *modelHistograms // SLOBuckets of each model's threshold (slo.go)
	batchSize *prometheus.HistogramVec
	queue     *prometheus.GaugeVec
	instances *prometheus.GaugeVec
	bounces   *prometheus.CounterVec
	backoff   *prometheus.HistogramVec
	slo       *sloMetrics
}

// New returns the gateway's metrics registered on reg; a nil reg registers nothing.
func New(reg prometheus.Registerer) (*Set, error) {
	m := &Set{
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
		bounces: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sloserve_batch_bounces_total",
			Help: "Batches an instance refused as busy (its 429: the worker's --max-in-flight, shared with other gateway replicas) and the gateway put back at its queue head, by model.",
		}, []string{"model"}),
		backoff: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sloserve_busy_backoff_seconds",
			Help:    "Back-off the gateway gave an instance that answered busy (no batch to it meanwhile), by model.",
			Buckets: []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05},
		}, []string{"model"}),
		slo: newSLOMetrics(),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range append([]prometheus.Collector{m.requests, m.duration, m.batchSize, m.queue, m.instances, m.bounces, m.backoff}, m.slo.collectors()...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Model is one model's curried metrics, looked up once so the hot path does not hash labels,
// and its Triton statistics. It observes the model's batcher (batcher.Observer).
type Model struct {
	outcome   map[string]prometheus.Counter
	duration  prometheus.Observer
	batchSize prometheus.Observer
	queue     prometheus.Gauge
	ready     prometheus.Gauge
	draining  prometheus.Gauge
	bounces   prometheus.Counter
	backoff   prometheus.Observer
	queueWait prometheus.Observer
	backend   prometheus.Observer
	slo       *sloWindow
	tstats    tritonStats // Triton's statistics (ModelStatistics)
}

// ForModel returns model's metrics, its SLO series set from spec.
func (m *Set) ForModel(model string, spec slo.Spec) *Model {
	mm := &Model{
		outcome:   make(map[string]prometheus.Counter, len(Outcomes)),
		duration:  m.duration.forModel(model, spec.Threshold),
		queueWait: m.slo.queueWait.forModel(model, spec.Threshold),
		backend:   m.slo.backend.forModel(model, spec.Threshold),
		slo:       m.slo.window(model, spec.Threshold, spec.Target),
		batchSize: m.batchSize.WithLabelValues(model),
		queue:     m.queue.WithLabelValues(model),
		ready:     m.instances.WithLabelValues(model, "ready"),
		draining:  m.instances.WithLabelValues(model, "draining"),
		bounces:   m.bounces.WithLabelValues(model),
		backoff:   m.backoff.WithLabelValues(model),
	}
	for _, o := range Outcomes {
		mm.outcome[o] = m.requests.WithLabelValues(model, o)
	}
	return mm
}

// Requests returns the counter of model's answers of outcome (sloserve_requests_total).
func (m *Set) Requests(model, outcome string) prometheus.Counter {
	return m.requests.WithLabelValues(model, outcome)
}

// Answer counts one answered inference request of outcome that took elapsed, against the
// model's SLO threshold.
func (mm *Model) Answer(threshold time.Duration, outcome string, elapsed time.Duration) {
	mm.outcome[outcome].Inc()
	if outcome == OutcomeOK { // like Triton's request duration: successes only (failures are counted by outcome)
		mm.duration.Observe(elapsed.Seconds())
	}
	mm.slo.observe(threshold, outcome, elapsed)
}

// Request records one answered request of rows rows in the Triton statistics.
func (mm *Model) Request(rows int64, arrival, done time.Time, err error) {
	mm.tstats.request(rows, arrival, done, err)
}

// Statistics are the model's statistics in Triton's terms (name and version left to the caller).
func (mm *Model) Statistics() oip.ModelStatistics { return mm.tstats.snapshot() }

// Drop deletes a removed model's series, so that a retired repository generation's gauges do
// not stay at their last values (and its label values do not pile up across reloads).
func (m *Set) Drop(model string) {
	l := prometheus.Labels{"model": model}
	m.requests.DeletePartialMatch(l)
	m.duration.drop(model)
	m.slo.drop(model)
	m.batchSize.DeletePartialMatch(l)
	m.queue.DeletePartialMatch(l)
	m.instances.DeletePartialMatch(l)
	m.bounces.DeletePartialMatch(l)
	m.backoff.DeletePartialMatch(l)
}
