package analytic

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// Replay is what a plan measures when its buffer is replayed on arrivals (ReplayPlan): the
// simulated counterpart of Plan's predictions.
type Replay struct {
	// Requests is the number of requests replayed.
	Requests int `json:"requests"`
	// LatencyMS is the simulated p-th percentile latency (the plan's percentile), ms.
	LatencyMS float64 `json:"latency_ms"`
	// WithinSLO is the fraction of requests within the SLO.
	WithinSLO float64 `json:"within_slo"`
	// MeanBatchSize is the mean number of requests per call.
	MeanBatchSize float64 `json:"mean_batch_size"`
	// CostPerRequest is the bill divided by the requests, dollars.
	CostPerRequest float64 `json:"cost_per_request_usd"`
	// ServiceCV is the service noise the replay applied (log-normal factor per batch, mean 1).
	ServiceCV float64 `json:"service_cv"`
}

// ReplayPlan replays interarrivals (seconds) through the plan's buffer (SimulateBuffer with its
// B and T, service times svc at its memory), multiplies every batch's service time by a
// log-normal factor of mean 1 and coefficient of variation cv drawn from rng (none for cv = 0),
// and measures the plan's percentile, the fraction within slo and the cost under pricing. It is
// the check of `sloserve plan batch --validate`; pure given rng.
func ReplayPlan(interarrivals []float64, svc ServiceModel, plan Plan, pricing Pricing, slo time.Duration, cv float64, rng *rand.Rand) Replay {
	b := max(plan.MaxBatch, 1)
	s := make([]float64, b)
	for k := range s {
		s[k] = svc.ServiceTime(k+1, plan.MemoryMB)
	}
	lat, batches := SimulateBuffer(interarrivals, b, plan.Timeout.Seconds(), s)
	out := Replay{Requests: len(lat), ServiceCV: cv}
	if len(lat) == 0 {
		return out
	}
	sig := math.Sqrt(math.Log1p(cv * cv))
	cost, within, i := 0.0, 0, 0
	for _, k := range batches {
		x := 1.0
		if cv > 0 {
			x = math.Exp(sig*rng.NormFloat64() - sig*sig/2)
		}
		st := s[k-1] * x
		cost += pricing.CallCost(st, plan.MemoryMB)
		for range k {
			lat[i] += st - s[k-1]
			if lat[i] <= slo.Seconds() {
				within++
			}
			i++
		}
	}
	sort.Float64s(lat)
	out.LatencyMS = 1000 * EmpiricalQuantile(lat, plan.Percentile)
	out.WithinSLO = float64(within) / float64(len(lat))
	out.MeanBatchSize = float64(len(lat)) / float64(len(batches))
	out.CostPerRequest = cost / float64(len(lat))
	return out
}
