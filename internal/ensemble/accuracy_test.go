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
			if n%2 == 0 { // an exact tie counts one half
				want += binom(n, n/2) * math.Pow(a, float64(n/2)) * math.Pow(1-a, float64(n/2)) / 2
			}
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

// TestEnsembleAccuracyEvenTie: an even ensemble's tie is broken by the vote (weights, order), a
// coin flip on average, so two models of accuracy a score a — not a², which made any even
// ensemble look worse than its odd sub-ensembles (issue #18, item 15).
func TestEnsembleAccuracyEvenTie(t *testing.T) {
	tests := []struct {
		name string
		acc  []float64
		want float64
	}{
		{"two equal models score one", []float64{0.9, 0.9}, 0.9},
		{"two models: both right plus half of one right", []float64{0.9, 0.8}, 0.72 + (0.9*0.2+0.1*0.8)/2},
		{"four equal models", []float64{0.8, 0.8, 0.8, 0.8}, MajorityAccuracy(4, 0.8) + 6*0.64*0.04/2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EnsembleAccuracy(tt.acc); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("EnsembleAccuracy(%v) (-want +got):\n-%.6f\n+%.6f", tt.acc, tt.want, got)
			}
		})
	}
}

// TestEnsembleAccuracyCorrelated checks the copula model against a Monte Carlo draw of the
// same model, its limits (ρ = 0 is EnsembleAccuracy; near 1 the ensemble is its median member)
// and that FitCorrelation recovers the ρ it was drawn with.
func TestEnsembleAccuracyCorrelated(t *testing.T) {
	acc := []float64{0.89, 0.89, 0.89}
	if got, want := EnsembleAccuracyCorrelated(acc, 0), EnsembleAccuracy(acc); got != want {
		t.Errorf("ρ = 0 (-want +got): -%v +%v", want, got)
	}
	if got := EnsembleAccuracyCorrelated(acc, 0.999); math.Abs(got-0.89) > 0.01 {
		t.Errorf("ρ → 1: %.4f, want ≈ 0.89 (the members err together)", got)
	}
	for _, rho := range []float64{0.3, 0.6, 0.8} {
		rng := rand.New(rand.NewPCG(5, uint64(rho*10)))
		const n = 200000
		right := make([][]bool, len(acc))
		maj := 0
		for range n {
			s := rng.NormFloat64()
			k := 0
			for m, a := range acc {
				ok := math.Sqrt(rho)*s+math.Sqrt(1-rho)*rng.NormFloat64() < probit(a)
				right[m] = append(right[m], ok)
				if ok {
					k++
				}
			}
			if k >= 2 {
				maj++
			}
		}
		want := float64(maj) / n
		if got := EnsembleAccuracyCorrelated(acc, rho); math.Abs(got-want) > 0.003 {
			t.Errorf("ρ = %v: (-monte carlo +model) -%.4f +%.4f", rho, want, got)
		}
		if got := FitCorrelation(right); math.Abs(got-rho) > 0.03 {
			t.Errorf("FitCorrelation (-want +got): -%v +%.3f", rho, got)
		}
	}
}
