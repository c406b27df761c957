package infless

import (
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/profile"
)

// ProfilePredictor predicts from a measured INFless profile: the exact ⟨cpu, gpu, batch⟩ point, or
// infeasible when it was not measured (or measured as a timeout).
func ProfilePredictor(p profile.INFlessProfile) Predictor {
	type key struct{ b, cpu, gpu int }
	m := make(map[key]time.Duration, len(p.Points))
	for _, x := range p.Points {
		m[key{x.Batch, x.CPU, x.GPU}] = x.Latency
	}
	return func(b int, r cluster.Resources) (time.Duration, bool) {
		t, ok := m[key{b, r.CPU, r.GPU}]
		return t, ok
	}
}

// ProfileSpace returns the batch sizes and resource configurations measured in p — the search space
// Alg. 1 explores for that function.
func ProfileSpace(p profile.INFlessProfile) (batches []int, res []cluster.Resources) {
	seenB := map[int]bool{}
	seenR := map[cluster.Resources]bool{}
	for _, x := range p.Points {
		if !seenB[x.Batch] {
			seenB[x.Batch] = true
			batches = append(batches, x.Batch)
		}
		r := cluster.Resources{CPU: x.CPU, GPU: x.GPU}
		if !seenR[r] {
			seenR[r] = true
			res = append(res, r)
		}
	}
	return batches, res
}

// NoisyPredictor is p with a seeded per-configuration error of up to ±e: the prediction of
// ⟨b, cpu, gpu⟩ for function fn is p's time × (1 + e·u), u uniform in [−1, 1], drawn once per
// configuration from (seed, fn, b, cpu, gpu) — the same configuration is always mispredicted the
// same way, as a predictor's systematic error is (INFless Fig. 8 reports COP within 10 %).
// e = 0 returns p.
func NoisyPredictor(p Predictor, fn string, e float64, seed uint64) Predictor {
	if e == 0 {
		return p
	}
	h := fnv.New64a()
	h.Write([]byte(fn))
	base := h.Sum64()
	return func(b int, r cluster.Resources) (time.Duration, bool) {
		t, ok := p(b, r)
		if !ok {
			return t, ok
		}
		rng := rand.New(rand.NewPCG(seed^base, uint64(b)<<40^uint64(r.CPU)<<20^uint64(r.GPU)))
		u := 2*rng.Float64() - 1
		return time.Duration(float64(t) * (1 + e*u)), true
	}
}
