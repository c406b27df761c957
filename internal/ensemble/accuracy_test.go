package ensemble

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMajorityAccuracy(t *testing.T) {
	tests := []struct {
		name string
		n    int
		a    float64
		want float64
	}{
		{"appendix A: N=10 a=0.7", 10, 0.7, 0.8497},
		{"single model is its own accuracy", 1, 0.7, 0.7},
		{"two models must both be right", 2, 0.7, 0.49},
		{"three fair coins", 3, 0.5, 0.5},
		{"perfect models", 5, 1, 1},
		{"useless models", 5, 0, 0},
		{"no models", 0, 0.9, 0},
		{"accuracy clamped above 1", 3, 1.5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MajorityAccuracy(tt.n, tt.a)
			if math.Abs(got-tt.want) > 5e-5 {
				t.Errorf("MajorityAccuracy(%d, %v) (-want +got):\n-%.5f\n+%.5f", tt.n, tt.a, tt.want, got)
			}
		})
	}
}

func TestEnsembleAccuracyMatchesBinomial(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for _, a := range []float64{0.3, 0.5, 0.7, 0.93} {
			acc := make([]float64, n)
			for i := range acc {
				acc[i] = a
			}
			want, got := MajorityAccuracy(n, a), EnsembleAccuracy(acc)
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("n=%d a=%v (-want +got):\n-%v\n+%v", n, a, want, got)
			}
		}
	}
}

// TestEnsembleAccuracyProperties checks, on random ensembles, that the Poisson-binomial accuracy
// is a probability, is at least Appendix A's bound with the least accurate model's a, and grows
// when any member becomes more accurate.
func TestEnsembleAccuracyProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 2000 {
		n := 1 + rng.IntN(11)
		acc := make([]float64, n)
		lo := 1.0
		for j := range acc {
			acc[j] = rng.Float64()
			lo = min(lo, acc[j])
		}
		p := EnsembleAccuracy(acc)
		if p < 0 || p > 1 {
			t.Fatalf("case %d %v: accuracy %v outside [0, 1]", i, acc, p)
		}
		if bound := MajorityAccuracy(n, lo); p < bound-1e-12 {
			t.Fatalf("case %d %v: accuracy %v below the appendix-A bound %v", i, acc, p, bound)
		}
		j := rng.IntN(n)
		acc[j] = acc[j] + (1-acc[j])*rng.Float64()
		if q := EnsembleAccuracy(acc); q < p-1e-12 {
			t.Fatalf("case %d: raising model %d's accuracy lowered the ensemble's: %v -> %v", i, j, p, q)
		}
	}
}
