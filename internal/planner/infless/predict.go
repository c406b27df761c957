package infless

import (
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
