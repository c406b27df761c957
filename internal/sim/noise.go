package sim

import (
	"math"
	"math/rand/v2"
	"sync"
)

// The service noise's factors, shared (issue #17 item 6). Without factor lists a run's
// log-normal factors are a function of its seed and σ alone: rngSvc, seeded by Config.Seed,
// feeds nothing but them (fillNoise), so every run with the same seed and noise draws the same
// sequence, value for value, however its policy batches. The scoreboard's 600 rows all use one
// seed and one noise: drawing each factor again in every run (a normal draw and a math.Exp, 6 %
// of its CPU) computed one sequence hundreds of times. noiseMemo keeps each sequence's blocks
// as the first run to reach them draws them; the runs after it read them.

// noiseMemoBlock is how many factors a shared block holds (256 KiB).
const noiseMemoBlock = 1 << 15

// noiseMemo holds the shared sequences up to cap factors in all; past it, a run draws its own
// (noiseSeq.block).
type noiseMemo struct {
	mu   sync.Mutex
	cap  int
	used int
	seqs map[noiseKey]*noiseSeq
}

type noiseKey struct {
	seed uint64
	sig  uint64 // math.Float64bits of σ
}

// sharedNoise is the process's memo: 32 M factors (256 MiB) at most, more than the longest
// run of the scoreboard draws (fn3's evaluation part under knative, 16.7 M batches).
var sharedNoise = &noiseMemo{cap: 32 << 20}

// noiseSeq is one (seed, σ)'s sequence: blocks drawn so far, and the generator where they end.
type noiseSeq struct {
	memo   *noiseMemo
	sig    float64
	mu     sync.Mutex
	pcg    *rand.PCG
	rng    *rand.Rand
	blocks [][]float64
}

// seq returns the sequence of seed and σ.
func (m *noiseMemo) seq(seed uint64, sig float64) *noiseSeq {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := noiseKey{seed, math.Float64bits(sig)}
	s := m.seqs[k]
	if s == nil {
		if m.seqs == nil {
			m.seqs = map[noiseKey]*noiseSeq{}
		}
		pcg := rand.NewPCG(seed, 0x5e541ce) // rngSvc's seeding (Run)
		s = &noiseSeq{memo: m, sig: sig, pcg: pcg, rng: rand.New(pcg)}
		m.seqs[k] = s
	}
	return s
}

// reserve takes n factors of the memo's capacity, reporting whether there was room.
func (m *noiseMemo) reserve(n int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used+n > m.cap {
		return false
	}
	m.used += n
	return true
}

// block returns the sequence's k-th block (factors k·noiseMemoBlock onwards), drawing it if no
// run has yet. A run asks for its blocks in order, so k is at most the number drawn. When the
// memo is full and block k is not drawn, it returns nil and a generator at the block's start,
// from which the run draws the rest of its sequence itself.
func (s *noiseSeq) block(k int) ([]float64, *rand.PCG) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case k < len(s.blocks):
		return s.blocks[k], nil
	case k > len(s.blocks): // no generator state is kept for a later block
		panic("sim: noise block asked out of order")
	case !s.memo.reserve(noiseMemoBlock):
		pcg := *s.pcg
		return nil, &pcg
	}
	b := make([]float64, noiseMemoBlock)
	for i := range b {
		b[i] = lognormal(s.rng, s.sig)
	}
	s.blocks = append(s.blocks, b)
	return b, nil
}

// lognormal draws one log-normal factor of mean 1 (σ = sig) from rng.
func lognormal(rng *rand.Rand, sig float64) float64 {
	return math.Exp(sig*rng.NormFloat64() - sig*sig/2)
}
