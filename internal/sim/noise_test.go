package sim

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/slo"
)

// TestSharedNoiseMatchesOneByOne: runs reading a shared sequence — several at once, one
// overtaking another, past the memo's capacity where each draws on by itself — hand out the
// factors drawing each one by one from the run's own rngSvc gave, bit for bit.
func TestSharedNoiseMatchesOneByOne(t *testing.T) {
	const n = 3*noiseMemoBlock + 77
	for _, seed := range []uint64{7, 8} {
		cv := 0.05
		sig := math.Sqrt(math.Log1p(cv * cv))
		ref := rand.New(rand.NewPCG(seed, 0x5e541ce))
		want := make([]float64, n)
		for i := range want {
			want[i] = math.Exp(sig*ref.NormFloat64() - sig*sig/2)
		}
		memo := &noiseMemo{cap: 2 * noiseMemoBlock} // two blocks shared, the rest drawn by each run
		var wg sync.WaitGroup
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cfg := DefaultConfig()
				cfg.NoiseCV, cfg.Seed = cv, seed
				e := &engine{cfg: cfg, noiseSig: sig, noiseSeq: memo.seq(seed, sig),
					rngSvc: rand.New(rand.NewPCG(seed, 0x5e541ce))}
				for i := range n - r*1000 {
					if got := e.noise(); math.Float64bits(got) != math.Float64bits(want[i]) {
						t.Errorf("seed %d, run %d, factor %d: %v, one by one %v", seed, r, i, got, want[i])
						return
					}
				}
			}()
		}
		wg.Wait()
		if got := len(memo.seq(seed, sig).blocks); got != 2 {
			t.Errorf("seed %d: %d blocks shared, want the memo's capacity, 2", seed, got)
		}
		memo.used = 0 // the second seed gets its own two blocks
	}
}

// TestRunSharesNoise: Run takes its factors from the shared sequence of its seed and noise —
// the first run draws the block, the second reads it and ends the same — and a run with factor
// lists draws its own.
func TestRunSharesNoise(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 424242
	cfg.NoiseCV = 0.2
	sig := math.Sqrt(math.Log1p(cfg.NoiseCV * cfg.NoiseCV))
	s := sharedNoise.seq(cfg.Seed, sig)
	blocks := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.blocks)
	}
	model := oneTypeModel(t, 10*time.Millisecond, 1)
	run := func(cfg Config) slo.Summary {
		res, err := Run(t.Context(), cfg, nil, model, staticPolicy(2, nil), newPoisson(50, 5000, 3))
		if err != nil {
			t.Fatal(err)
		}
		return res.Summary
	}
	if got := blocks(); got != 0 {
		t.Fatalf("seed %d: %d blocks before any run", cfg.Seed, got)
	}
	first := run(cfg)
	if got := blocks(); got != 1 {
		t.Fatalf("seed %d: %d blocks after one run of 5000 batches, want 1", cfg.Seed, got)
	}
	if second := run(cfg); !reflect.DeepEqual(first, second) {
		t.Fatalf("the run reading the shared block differs from the one drawing it:\n%+v\n%+v", first, second)
	}
	listed := cfg
	listed.Seed = 424243
	listed.NoiseFactors = []float64{0.9, 1.1}
	run(listed)
	sharedNoise.mu.Lock()
	_, ok := sharedNoise.seqs[noiseKey{listed.Seed, math.Float64bits(sig)}]
	sharedNoise.mu.Unlock()
	if ok {
		t.Fatal("a run with factor lists made a shared sequence")
	}
}
