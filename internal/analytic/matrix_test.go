package analytic

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestExpmMatchesGonumPade(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		name string
		n    int
		t    float64
	}{{"small", 3, 0.1}, {"medium", 8, 1}, {"stiff", 12, 40}} {
		t.Run(tc.name, func(t *testing.T) {
			q := make([]float64, tc.n*tc.n)
			for i := 0; i < tc.n; i++ {
				row := 0.0
				for j := 0; j < tc.n; j++ {
					if i != j && rng.Float64() < 0.6 {
						q[i*tc.n+j] = rng.Float64() * 5
						row += q[i*tc.n+j]
					}
				}
				q[i*tc.n+i] = -row
			}
			got := expm(q, tc.n, tc.t)
			var want mat.Dense
			qm := mat.NewDense(tc.n, tc.n, append([]float64(nil), q...))
			qm.Scale(tc.t, qm)
			want.Exp(qm)
			for i := 0; i < tc.n; i++ {
				rs := 0.0
				for j := 0; j < tc.n; j++ {
					rs += got[i*tc.n+j]
					if d := math.Abs(got[i*tc.n+j] - want.At(i, j)); d > 1e-10 {
						t.Errorf("e^{Qt}[%d,%d]: (-pade +uniformisation) %g %g", i, j, want.At(i, j), got[i*tc.n+j])
					}
				}
				if math.Abs(rs-1) > 1e-12 {
					t.Errorf("row %d sums to %v, want 1", i, rs)
				}
			}
		})
	}
}

func TestPoissonBatchPMFIsEq7(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lambda  float64
		b       int
		timeout float64
	}{{"light", 5, 10, 0.1}, {"heavy", 50, 10, 0.3}, {"B2", 20, 2, 0.05}} {
		t.Run(tc.name, func(t *testing.T) {
			bt, err := Analyze(mustMAP(t)(Poisson(tc.lambda)), tc.b, tc.timeout, StartExact)
			if err != nil {
				t.Fatal(err)
			}
			got := bt.BatchPMF()
			lt := tc.lambda * tc.timeout
			sum := 0.0
			for k := 0; k < tc.b-1; k++ {
				want := math.Pow(lt, float64(k)) / math.Gamma(float64(k+1)) * math.Exp(-lt)
				sum += want
				if math.Abs(got[k]-want) > 1e-12 {
					t.Errorf("π_%d(T): (-Eq.7 +got) %g %g", k, want, got[k])
				}
			}
			if want := 1 - sum; math.Abs(got[tc.b-1]-want) > 1e-12 {
				t.Errorf("π_B-1(T): (-Eq.7 +got) %g %g", want, got[tc.b-1])
			}
			// Eq. 8: ρ_k ∝ k·π_k; and the request wait CDF reaches each ρ_k.
			rho := bt.RequestPMF()
			for k := range rho {
				if want := float64(k+1) * got[k] / bt.MeanBatchSize(); math.Abs(rho[k]-want) > 1e-12 {
					t.Errorf("ρ_%d: (-Eq.8 +got) %g %g", k+1, want, rho[k])
				}
				cont := bt.cdf[k][bt.j] + bt.atom[k]
				if math.Abs(cont-rho[k]) > 1e-9 {
					t.Errorf("wait mass of batch %d: (-ρ +integrated) %g %g", k+1, rho[k], cont)
				}
			}
		})
	}
}

// TestMatMulSpanBitIdentical: skipping the zero spans of a block upper-triangular factor gives
// exactly the dense product's bits (the same terms, the same order).
func TestMatMulSpanBitIdentical(t *testing.T) {
	const r, k, c = 9, 12, 10
	a, b := make([]float64, r*k), make([]float64, k*c)
	for i := range a {
		a[i] = float64((i*37)%11) / 7
	}
	for l := 0; l < k; l++ {
		for j := l * c / k; j < c-l%3; j++ {
			b[l*c+j] = float64((l*13+j*7)%17) / 3.3
		}
	}
	want := make([]float64, r*c)
	for i := 0; i < r; i++ {
		for l := 0; l < k; l++ {
			for j := 0; j < c; j++ {
				want[i*c+j] += a[i*k+l] * b[l*c+j]
			}
		}
	}
	for _, rows := range []int{r, 2} {
		got := make([]float64, rows*c)
		matMul(got, a, b, rows, k, c)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%d rows: [%d] = %v, dense %v", rows, i, got[i], want[i])
			}
		}
	}
	got := make([]float64, c)
	vecMatSpan(got, a[:k], b, k, c, spans(b, k, c))
	for j := range got {
		if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
			t.Fatalf("vecMatSpan [%d] = %v, dense %v", j, got[j], want[j])
		}
	}
}
