package gateway

import (
	"sync"
	"sync/atomic"
	"time"
)

// Counters are one model's cumulative request counters since the gateway started serving it,
// read by the controller every sample period (atomics only on the request path).
type Counters struct {
	// Arrivals counts inference requests that reached the model's batcher (admitted or not).
	Arrivals int64
	// Completed counts answered requests (any outcome); Missed those of them that failed, were
	// refused or took longer than the model's SLO threshold.
	Completed, Missed int64
	// InSystem is the total time the completed requests spent in the gateway (queued and in
	// service); its growth over a period divided by the period is the time-averaged concurrency
	// (Little's law).
	InSystem time.Duration
	// Batches is the number of batches dispatched; Dispatched the number of requests in them.
	Batches, Dispatched int64
	// Queued is the number of requests waiting in the model's batch queue now (a gauge).
	Queued int64
}

// liveStats holds a model's Counters as atomics.
type liveStats struct {
	arrivals, completed, missed, inSystem atomic.Int64
}

// statsTable maps model names to their liveStats; entries are created once and never removed,
// so loads on the request path are lock-free.
type statsTable struct{ m sync.Map }

func (t *statsTable) get(model string) *liveStats {
	if v, ok := t.m.Load(model); ok {
		return v.(*liveStats)
	}
	v, _ := t.m.LoadOrStore(model, &liveStats{})
	return v.(*liveStats)
}

func (g *Gateway) liveStats(model string) *liveStats { return g.stats.get(model) }

// record counts one answered request that arrived at arrival and was answered at done.
func (s *liveStats) record(arrival, done time.Time, threshold time.Duration, err error) {
	d := done.Sub(arrival)
	s.inSystem.Add(int64(d))
	if err != nil || d > threshold {
		s.missed.Add(1)
	}
	s.completed.Add(1)
}

// Counters returns a model's cumulative counters.
func (g *Gateway) Counters(model string) (Counters, error) {
	b, err := g.batcher(model)
	if err != nil {
		return Counters{}, err
	}
	s := g.liveStats(model)
	return Counters{Arrivals: s.arrivals.Load(), Completed: s.completed.Load(), Missed: s.missed.Load(),
		InSystem: time.Duration(s.inSystem.Load()), Batches: b.Batches(), Dispatched: b.Dispatched(),
		Queued: b.Queued()}, nil
}
