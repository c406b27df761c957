package metrics

import (
	"iter"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/batcher"
)

// SLOBuckets returns histogram bucket upper bounds, in seconds, aligned to an SLO threshold:
// a few coarse bounds below a quarter of it, then bounds 10 % apart from 0.24·threshold to about
// 2·threshold (the threshold itself is one of them, so the le="threshold" bucket counts exactly
// the requests that met it), then 3, 5 and 10 times the threshold. With bounds 10 % apart,
// histogram_quantile's linear interpolation inside a bucket is off by less than 10 % wherever
// the quantile falls near the threshold, where fixed decade buckets (50 ms, 100 ms around a
// 64 ms p99) were off by 40 %.
func SLOBuckets(threshold time.Duration) []float64 {
	t := threshold.Seconds()
	if !(t > 0) {
		return prometheus.DefBuckets
	}
	out := []float64{0.01 * t, 0.02 * t, 0.05 * t, 0.1 * t, 0.15 * t, 0.2 * t}
	for k := -15; k <= 7; k++ {
		out = append(out, t*math.Pow(1.1, float64(k)))
	}
	out = append(out, 3*t, 5*t, 10*t)
	for i, v := range out {
		out[i] = roundSig(v)
	}
	out[6+15] = t // exact, whatever the rounding
	sort.Float64s(out)
	return slices.Compact(out)
}

// roundSig rounds v to 4 significant digits, so that le labels read well (0.06400, not
// 0.064000000000001).
func roundSig(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// modelHistograms is a histogram family with one histogram per model, each with its own
// buckets (SLOBuckets of the model's threshold) and a native (sparse) histogram beside the
// classic buckets, for servers that scrape them. It is an unchecked collector: models are added
// while it is registered.
type modelHistograms struct {
	name, help string
	mu         sync.RWMutex
	byModel    map[string]prometheus.Histogram
}

func newModelHistograms(name, help string) *modelHistograms {
	return &modelHistograms{name: name, help: help, byModel: map[string]prometheus.Histogram{}}
}

// forModel returns the model's histogram, creating it with buckets aligned to threshold.
func (h *modelHistograms) forModel(model string, threshold time.Duration) prometheus.Histogram {
	h.mu.Lock()
	defer h.mu.Unlock()
	if x, ok := h.byModel[model]; ok {
		return x
	}
	x := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: h.name, Help: h.help, ConstLabels: prometheus.Labels{"model": model},
		Buckets:                         SLOBuckets(threshold),
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	})
	h.byModel[model] = x
	return x
}

// Describe sends nothing: the collector is unchecked (its models come and go).
func (h *modelHistograms) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (h *modelHistograms) Collect(ch chan<- prometheus.Metric) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, x := range h.byModel {
		ch <- x
	}
}

// SLOWindow is the span over which sloserve_slo_attainment_ratio is computed, in SLOWindowSlots
// slots of SLOWindow/SLOWindowSlots each.
const (
	SLOWindow      = 5 * time.Minute
	SLOWindowSlots = 30
)

// sloWindow counts a model's SLO-eligible requests and those that met the SLO over the last
// SLOWindow, in a ring of slots; safe for concurrent use.
type sloWindow struct {
	mu    sync.Mutex
	slot  [SLOWindowSlots]struct{ epoch, total, good int64 }
	now   func() time.Time
	total prometheus.Counter // cumulative eligible requests (sloserve_slo_requests_total)
	bad   prometheus.Counter // cumulative violations (sloserve_slo_violations_total)
}

// observe counts one answered request of outcome that took elapsed against threshold. Client
// errors and cancellations are not the server's to meet and are left out; any other failure,
// refusal or time-out is a violation, as is a success slower than the threshold.
func (w *sloWindow) observe(threshold time.Duration, outcome string, elapsed time.Duration) {
	if w == nil || outcome == OutcomeBadRequest || outcome == OutcomeCanceled {
		return
	}
	good := outcome == OutcomeOK && elapsed <= threshold
	w.total.Inc()
	if !good {
		w.bad.Inc()
	}
	epoch := w.now().UnixNano() / int64(SLOWindow/SLOWindowSlots)
	w.mu.Lock()
	s := &w.slot[epoch%SLOWindowSlots]
	if s.epoch != epoch {
		s.epoch, s.total, s.good = epoch, 0, 0
	}
	s.total++
	if good {
		s.good++
	}
	w.mu.Unlock()
}

// attainment returns the fraction of eligible requests that met the SLO over the window, 1
// when there were none (no request missed it).
func (w *sloWindow) attainment() float64 {
	epoch := w.now().UnixNano() / int64(SLOWindow/SLOWindowSlots)
	var total, good int64
	w.mu.Lock()
	for _, s := range w.slot {
		if s.epoch > epoch-SLOWindowSlots && s.epoch <= epoch {
			total += s.total
			good += s.good
		}
	}
	w.mu.Unlock()
	if total == 0 {
		return 1
	}
	return float64(good) / float64(total)
}

// sloMetrics are the per-model SLO series: threshold and target (for alert rules), counters of
// eligible requests and violations, and the attainment over SLOWindow.
type sloMetrics struct {
	threshold, target, attainment *prometheus.GaugeVec
	total, bad                    *prometheus.CounterVec
	queueWait, backend            *modelHistograms
	mu                            sync.Mutex
	windows                       map[string]*sloWindow
}

func newSLOMetrics() *sloMetrics {
	return &sloMetrics{
		threshold: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sloserve_slo_threshold_seconds",
			Help: "The model's SLO latency threshold.",
		}, []string{"model"}),
		target: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sloserve_slo_target_ratio",
			Help: "The model's SLO target: the fraction of requests that must meet the threshold.",
		}, []string{"model"}),
		attainment: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sloserve_slo_attainment_ratio",
			Help: "Fraction of the model's SLO-eligible requests (all but client errors and cancellations) answered 200 within the threshold over the last 5 minutes; 1 when there were none.",
		}, []string{"model"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sloserve_slo_requests_total",
			Help: "SLO-eligible inference requests answered (all but client errors and cancellations), by model.",
		}, []string{"model"}),
		bad: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sloserve_slo_violations_total",
			Help: "SLO-eligible inference requests that failed, were refused or timed out, or succeeded later than the threshold, by model.",
		}, []string{"model"}),
		queueWait: newModelHistograms("sloserve_queue_wait_seconds",
			"Time a request waited in the gateway's batch queue, from arrival to the dispatch of its batch (Triton's queue time), by model."),
		backend: newModelHistograms("sloserve_backend_seconds",
			"Round trip of the batch that served a request, from dispatch to the worker's answer (Triton's compute time plus the hop), by model; one observation per request."),
		windows: map[string]*sloWindow{},
	}
}

func (m *sloMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.threshold, m.target, m, m.total, m.bad, m.queueWait, m.backend}
}

// Describe implements prometheus.Collector for the attainment gauges.
func (m *sloMetrics) Describe(ch chan<- *prometheus.Desc) { m.attainment.Describe(ch) }

// Collect implements prometheus.Collector: it refreshes each model's attainment gauge.
func (m *sloMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	for model, w := range m.windows {
		m.attainment.WithLabelValues(model).Set(w.attainment())
	}
	m.mu.Unlock()
	m.attainment.Collect(ch)
}

// window returns the model's SLO window, registering its threshold and target.
func (m *sloMetrics) window(model string, threshold time.Duration, target float64) *sloWindow {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w, ok := m.windows[model]; ok {
		return w
	}
	m.threshold.WithLabelValues(model).Set(threshold.Seconds())
	m.target.WithLabelValues(model).Set(target)
	w := &sloWindow{now: time.Now, total: m.total.WithLabelValues(model), bad: m.bad.WithLabelValues(model)}
	m.windows[model] = w
	return w
}

var _ batcher.BounceObserver = (*Model)(nil)

// Bounced implements batcher.BounceObserver: one batch an instance refused as busy, and the
// back-off the instance got (sloserve_batch_bounces_total, sloserve_busy_backoff_seconds).
func (mm *Model) Bounced(backoff time.Duration) {
	mm.bounces.Inc()
	mm.backoff.Observe(backoff.Seconds())
}

// Answered implements batcher.Observer: the queue wait and the backend round trip of a request of
// a batch that was answered (not one sent back to the queue for a retry).
func (mm *Model) Answered(wait, rtt time.Duration) {
	mm.queueWait.Observe(wait.Seconds())
	mm.backend.Observe(rtt.Seconds())
}

// QueueLength implements batcher.Observer.
func (mm *Model) QueueLength(n int) { mm.queue.Set(float64(n)) }

// BatchSize implements batcher.Observer.
func (mm *Model) BatchSize(n int) { mm.batchSize.Observe(float64(n)) }

// InstanceCounts implements batcher.Observer.
func (mm *Model) InstanceCounts(ready, draining int) {
	mm.ready.Set(float64(ready))
	mm.draining.Set(float64(draining))
}

// Executed implements batcher.Observer: Triton's per-batch statistics.
func (mm *Model) Executed(rows int64, rtt time.Duration, waits iter.Seq[time.Duration]) {
	mm.tstats.batch(rows, rtt, waits)
}

// drop forgets model's histogram (a retired repository generation).
func (h *modelHistograms) drop(model string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byModel, model)
}

// drop deletes model's SLO series and window (a retired repository generation).
func (s *sloMetrics) drop(model string) {
	l := prometheus.Labels{"model": model}
	for _, v := range []*prometheus.GaugeVec{s.threshold, s.target, s.attainment} {
		v.DeletePartialMatch(l)
	}
	s.total.DeletePartialMatch(l)
	s.bad.DeletePartialMatch(l)
	s.queueWait.drop(model)
	s.backend.drop(model)
	s.mu.Lock()
	delete(s.windows, model)
	s.mu.Unlock()
}
