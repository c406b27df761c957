package ensemble

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Popularity tracks how many requests each model served over a sliding window, giving the
// importance weights of Cocktail's weighted autoscaling (Alg. 2 get_popularity, §4.2.2
// "Importance Sampling"; §5.1: requests served per model in the past 5 minutes). It is pure:
// callers pass the time of each request and of each query. It keeps one bucket per second of
// the window, so memory is bounded regardless of the request rate. A Popularity belongs to one
// goroutine.
type Popularity struct {
	window  time.Duration
	width   time.Duration
	buckets []popBucket
}

type popBucket struct {
	slot     int64 // absolute bucket number (time / width)
	requests int
	served   map[string]int
}

// NewPopularity returns a tracker over the given window (≤ 0 means DefaultPopularityWindow).
func NewPopularity(window time.Duration) *Popularity {
	if window <= 0 {
		window = DefaultPopularityWindow
	}
	width := time.Second
	if window < 10*time.Second {
		width = max(window/10, 1)
	}
	n := int(window / width)
	return &Popularity{window: window, width: width, buckets: make([]popBucket, n)}
}

// Record notes that the ensemble request at time t was served by models.
func (p *Popularity) Record(t time.Time, models []string) {
	slot := t.UnixNano() / int64(p.width)
	b := &p.buckets[int(mod(slot, int64(len(p.buckets))))]
	if b.slot != slot || b.served == nil {
		*b = popBucket{slot: slot, served: map[string]int{}}
	}
	b.requests++
	for _, m := range models {
		b.served[m]++
	}
}

func mod(a, b int64) int64 { return ((a % b) + b) % b }

// Weights returns each model's importance weight at now: the fraction of the window's ensemble
// requests that the model served, in [0, 1]. Multiplying the predicted request load by a
// model's weight gives the load its pool will see (Alg. 2 line 11). The original code divides
// by the busiest model's count instead (cocktail-constants.json "instance_weights"), which
// over-provisions every pool but the busiest; the fraction of requests is what §4.2.2 describes
// ("percentage of request served by it").
func (p *Popularity) Weights(now time.Time) map[string]float64 {
	cur := now.UnixNano() / int64(p.width)
	oldest := cur - int64(len(p.buckets)) + 1
	total := 0
	served := map[string]int{}
	for _, b := range p.buckets {
		if b.served == nil || b.slot < oldest || b.slot > cur {
			continue
		}
		total += b.requests
		for m, c := range b.served {
			served[m] += c
		}
	}
	out := make(map[string]float64, len(served))
	for m, c := range served {
		out[m] = float64(c) / float64(total)
	}
	return out
}

// PoolScale is the weighted-autoscaling decision for one model pool (Alg. 2).
type PoolScale struct {
	// Model names the pool.
	Model string
	// Weight is the model's importance weight.
	Weight float64
	// Load is the additional load for the pool, in requests per second:
	// (Predicted_load − Current_load) × weight.
	Load float64
	// Instances is the number of instances to launch: ⌈Load / per-instance capacity⌉.
	Instances int
}

// WeightedScale is Alg. 2's scale-up: when the predicted load (requests per second) exceeds the
// current load, each model pool gets the extra load times its importance weight, turned into
// instances with capacity[m] requests per second per instance. It returns nothing when the
// predicted load does not exceed the current one (scale-down is the idle timeout's job,
// §4.2.1). Pools are returned in name order; a pool without a positive capacity is an error.
func WeightedScale(predicted, current float64, weights map[string]float64, capacity map[string]float64) ([]PoolScale, error) {
	if math.IsNaN(predicted) || math.IsNaN(current) || predicted < 0 || current < 0 {
		return nil, fmt.Errorf("weighted scale: loads must be >= 0, got predicted %v current %v", predicted, current)
	}
	if predicted <= current {
		return nil, nil
	}
	ms := make([]string, 0, len(weights))
	for m := range weights {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	out := make([]PoolScale, 0, len(ms))
	for _, m := range ms {
		c := capacity[m]
		if !(c > 0) {
			return nil, fmt.Errorf("weighted scale: capacity of %q must be > 0, got %v", m, c)
		}
		load := (predicted - current) * weights[m]
		out = append(out, PoolScale{Model: m, Weight: weights[m], Load: load, Instances: int(math.Ceil(load/c - 1e-9))})
	}
	return out, nil
}
