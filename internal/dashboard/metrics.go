package dashboard

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// The gateway's metric names (internal/gateway/metrics/metrics.go) that MetricsSource reads.
const (
	metricRequests  = "sloserve_requests_total"           // counter{model, outcome}
	metricDuration  = "sloserve_request_duration_seconds" // histogram{model}
	metricBatchSize = "sloserve_batch_size"               // histogram{model}
	metricInstances = "sloserve_instances"                // gauge{model, state}
	outcomeOK       = "ok"
)

// MetricsOptions configures a MetricsSource.
type MetricsOptions struct {
	// SLO returns a model's objective; nil means slo.DefaultSpec for every model.
	SLO func(model string) slo.Spec
	// Window is the span the windowed quantities (rate, percentiles, attainment, batch mean)
	// are computed over, in wall-clock time. Default 10 s.
	Window time.Duration
}

// MetricsSource is a Source that reads the gateway's Prometheus metrics from a Gatherer (the
// gateway Stack's Registry), so the dashboard works before the gateway implements Source
// itself. From counter and histogram differences over Window it derives the answered-request
// rate (standing in for arrivals), latency percentiles (interpolated inside histogram
// buckets, so only as fine as the buckets), SLO attainment (requests answered "ok" within the
// threshold, interpolated at the threshold, over all answered), the mean and largest batch
// size, and instances by state (type "gateway", tier vm: the metrics carry neither). It knows
// no forecast and no cost: both are drawn as gaps. It is safe for concurrent use.
type MetricsSource struct {
	g    prometheus.Gatherer
	opts MetricsOptions

	mu   sync.Mutex
	hist []reading // cumulative readings, oldest first, spanning a little more than Window
}

var _ Source = (*MetricsSource)(nil)

// reading is every model's cumulative counters at one instant.
type reading struct {
	at     time.Time
	models map[string]*modelCounters
}

type modelCounters struct {
	requests, ok float64
	duration     histogram
	batch        histogram
	instances    map[provider.State]float64
}

// histogram is a cumulative Prometheus histogram: counts[i] observations ≤ bounds[i], total
// count observations in all, sum their sum.
type histogram struct {
	bounds, counts []float64
	count, sum     float64
}

// NewMetricsSource returns a MetricsSource over g.
func NewMetricsSource(g prometheus.Gatherer, opts MetricsOptions) (*MetricsSource, error) {
	if g == nil {
		return nil, fmt.Errorf("dashboard metrics source: nil Gatherer")
	}
	if opts.Window == 0 {
		opts.Window = 10 * time.Second
	}
	if opts.Window < 0 {
		return nil, fmt.Errorf("dashboard.metrics.window: must be > 0, got %v", opts.Window)
	}
	if opts.SLO == nil {
		opts.SLO = func(string) slo.Spec { return slo.DefaultSpec() }
	}
	return &MetricsSource{g: g, opts: opts}, nil
}

// Sample gathers the metrics and reports each model's state over the last Window.
func (s *MetricsSource) Sample(_ context.Context, now time.Time) ([]ModelSample, error) {
	fams, err := s.g.Gather()
	if err != nil && len(fams) == 0 {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	cur := reading{at: now, models: parseFamilies(fams)}

	s.mu.Lock()
	defer s.mu.Unlock()
	// The baseline is the newest reading at least Window old, else the oldest there is.
	base := cur
	for _, r := range s.hist {
		if now.Sub(r.at) < s.opts.Window {
			break
		}
		base = r
	}
	if base.at.Equal(cur.at) && len(s.hist) > 0 {
		base = s.hist[0]
	}
	s.hist = append(s.hist, cur)
	// Keep one reading older than Window as the next baseline.
	for len(s.hist) > 2 && now.Sub(s.hist[1].at) >= s.opts.Window {
		s.hist = s.hist[1:]
	}
	s.hist = slices.Clip(s.hist)

	names := make([]string, 0, len(cur.models))
	for name := range cur.models {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]ModelSample, 0, len(names))
	for _, name := range names {
		out = append(out, s.sample(name, cur, base))
	}
	return out, nil
}

func (s *MetricsSource) sample(name string, cur, base reading) ModelSample {
	spec := s.opts.SLO(name)
	c := cur.models[name]
	b, ok := base.models[name]
	if !ok {
		b = &modelCounters{}
	}
	nan := math.NaN()
	m := ModelSample{
		Model: name, SLO: spec,
		ArrivalRate: nan, Forecast: nan, BatchMean: nan, BatchMax: nan, Attainment: nan,
		Cost: slo.CostUSD{Total: nan, VM: nan, Serverless: nan},
	}
	for _, st := range []provider.State{provider.StateReady, provider.StateLaunching, provider.StateDraining, provider.StateInterrupted} {
		if n := int(c.instances[st]); n > 0 {
			m.Instances = append(m.Instances, InstanceCount{Type: "gateway", Tier: provider.TierVM, State: st, Count: n})
		}
	}
	dt := cur.at.Sub(base.at).Seconds()
	if dt <= 0 {
		return m
	}
	answered := c.requests - b.requests
	m.ArrivalRate = math.Max(0, answered) / dt
	dur := c.duration.minus(b.duration)
	if dur.count > 0 {
		m.Latency = Latency{
			P50: seconds(dur.quantile(0.50)),
			P95: seconds(dur.quantile(0.95)),
			P99: seconds(dur.quantile(0.99)),
		}
	}
	if answered > 0 {
		hits := math.Min(dur.countBelow(spec.Threshold.Seconds()), c.ok-b.ok)
		m.Attainment = math.Max(0, math.Min(1, hits/answered))
	}
	if bat := c.batch.minus(b.batch); bat.count > 0 {
		m.BatchMean = bat.sum / bat.count
		m.BatchMax = bat.highestBound()
	}
	return m
}

// seconds converts fractional seconds to a Duration; NaN is 0 (unknown).
func seconds(f float64) time.Duration {
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// parseFamilies extracts the gateway's metrics by model.
func parseFamilies(fams []*dto.MetricFamily) map[string]*modelCounters {
	out := map[string]*modelCounters{}
	get := func(m *dto.Metric) (*modelCounters, map[string]string) {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		name := labels["model"]
		if name == "" {
			return nil, nil
		}
		c, ok := out[name]
		if !ok {
			c = &modelCounters{instances: map[provider.State]float64{}}
			out[name] = c
		}
		return c, labels
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case metricRequests:
				if c, l := get(m); c != nil {
					v := m.GetCounter().GetValue()
					c.requests += v
					if l["outcome"] == outcomeOK {
						c.ok += v
					}
				}
			case metricDuration:
				if c, _ := get(m); c != nil {
					c.duration = histogramOf(m.GetHistogram())
				}
			case metricBatchSize:
				if c, _ := get(m); c != nil {
					c.batch = histogramOf(m.GetHistogram())
				}
			case metricInstances:
				if c, l := get(m); c != nil {
					c.instances[provider.State(l["state"])] += m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

func histogramOf(h *dto.Histogram) histogram {
	out := histogram{count: float64(h.GetSampleCount()), sum: h.GetSampleSum()}
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.counts = append(out.counts, float64(b.GetCumulativeCount()))
	}
	return out
}

// minus returns the observations of h that came after base (same buckets; base may be empty).
func (h histogram) minus(base histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), count: h.count - base.count, sum: h.sum - base.sum}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(base.counts) && len(base.bounds) == len(h.bounds) {
			out.counts[i] -= base.counts[i]
		}
	}
	return out
}

// quantile returns the q-quantile, interpolated linearly inside its bucket (the first bucket
// starts at 0); past the last finite bound it returns that bound. NaN when empty.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	lo, below := 0.0, 0.0
	for i, ub := range h.bounds {
		if h.counts[i] >= rank {
			in := h.counts[i] - below
			if in <= 0 {
				return ub
			}
			return lo + (ub-lo)*(rank-below)/in
		}
		lo, below = ub, h.counts[i]
	}
	return h.bounds[len(h.bounds)-1]
}

// countBelow returns the observations ≤ x, interpolated linearly inside x's bucket.
func (h histogram) countBelow(x float64) float64 {
	lo, below := 0.0, 0.0
	for i, ub := range h.bounds {
		if x <= ub {
			if ub == lo {
				return h.counts[i]
			}
			return below + (h.counts[i]-below)*(x-lo)/(ub-lo)
		}
		lo, below = ub, h.counts[i]
	}
	return below // beyond the last bound: the +Inf bucket's share is unknown, count it as a miss
}

// highestBound returns the upper bound of the highest non-empty bucket (NaN when none).
func (h histogram) highestBound() float64 {
	for i := len(h.bounds) - 1; i >= 0; i-- {
		prev := 0.0
		if i > 0 {
			prev = h.counts[i-1]
		}
		if h.counts[i] > prev {
			return h.bounds[i]
		}
	}
	return math.NaN()
}
