package analytic

import (
	"math"
	"sort"
)

// SimulateBuffer replays inter-arrival times (seconds) through BATCH's buffer (§III-B): the first
// request of a batch starts the timer, the batch is sent when it holds maxBatch requests or the
// timer reaches timeout seconds, and a batch of k requests is served in service[k−1] seconds by
// its own function instance (no queueing). It returns every request's latency in seconds, in
// arrival order, and the size of every batch. It is the reference the analytic model is
// validated against; pure and deterministic.
func SimulateBuffer(interarrivals []float64, maxBatch int, timeout float64, service []float64) (latencies []float64, batches []int) {
	latencies = make([]float64, 0, len(interarrivals))
	if maxBatch < 1 || len(service) < maxBatch {
		return latencies, nil
	}
	var open []float64 // arrival times in the open batch, relative to its first request
	deadline, opened := 0.0, 0.0
	flush := func(at float64) {
		s := service[len(open)-1]
		rel := at - opened
		if at == deadline {
			rel = timeout // exact, so that the first request of a timed-out batch waits T
		}
		for _, a := range open {
			latencies = append(latencies, rel-a+s)
		}
		batches = append(batches, len(open))
		open = open[:0]
	}
	now := 0.0
	for _, d := range interarrivals {
		now += d
		if len(open) > 0 && now > deadline {
			flush(deadline)
		}
		if len(open) == 0 {
			deadline, opened = now+timeout, now
		}
		open = append(open, now-opened)
		if len(open) == maxBatch || timeout <= 0 {
			flush(now)
		}
	}
	if len(open) > 0 {
		flush(deadline)
	}
	return latencies, batches
}

// leftLimit (seconds) is how far below a sample Kolmogorov evaluates F(x−): just beyond the
// atom tolerance of the model, far below any service-time scale.
const leftLimit = 10 * atomTolerance

// Kolmogorov returns sup_t |F̂(t) − F(t)| between the empirical CDF of samples and cdf, checking
// both sides of every sample (F may have atoms). samples is sorted in place.
func Kolmogorov(samples []float64, cdf func(float64) float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	sort.Float64s(samples)
	n := float64(len(samples))
	d := 0.0
	for i := 0; i < len(samples); {
		x := samples[i]
		j := i
		for j < len(samples) && samples[j] == x {
			j++
		}
		below := float64(i) / n // F̂(x−)
		at := float64(j) / n    // F̂(x)
		d = math.Max(d, math.Abs(at-cdf(x)))
		d = math.Max(d, math.Abs(below-cdf(x-leftLimit)))
		i = j
	}
	return d
}

// EmpiricalQuantile returns the p-quantile of sorted samples (nearest rank).
func EmpiricalQuantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
