package analytic

import (
	"fmt"
	"math"
	"testing"
)

// erlangCDF returns P(E_r ≤ x) for the sum E_r of r exponentials of rate lambda (E_0 = 0).
func erlangCDF(r int, lambda, x float64) float64 {
	if x < 0 {
		return 0
	}
	if r == 0 {
		return 1
	}
	lx := lambda * x
	term, sum := 1.0, 1.0
	for n := 1; n < r; n++ {
		term *= lx / float64(n)
		sum += term
	}
	return math.Max(0, 1-math.Exp(-lx)*sum)
}

// poissonWaitCDF is the closed form of P(W ≤ w) for a random request of BATCH's buffer with
// Poisson(λ) arrivals, max batch B and timeout T. The batch opens at its first request; its
// i-th later request arrives at E_i (Erlang(i, λ)), joins iff E_i ≤ T, and waits
// min(T − E_i, E_{B−1} − E_i), where E_{B−1} − E_i is Erlang(B−1−i) and independent of E_i; the
// first request waits min(T, E_{B−1}). Request-weighted over E[K] = 1 + Σ_i P(E_i ≤ T):
//
//	P(W ≤ w)·E[K] = P(E_{B−1} ≤ w) + Σ_{i=1}^{B−1} [P(E_i ≤ T) − P(E_i ≤ T−w)·P(E_{B−1−i} > w)]   (w < T)
func poissonWaitCDF(lambda float64, b int, timeout, w float64) float64 {
	if w < 0 {
		return 0
	}
	if w >= timeout || b == 1 {
		return 1
	}
	meanK, within := 1.0, erlangCDF(b-1, lambda, w)
	for i := 1; i <= b-1; i++ {
		in := erlangCDF(i, lambda, timeout)
		meanK += in
		within += in - erlangCDF(i, lambda, timeout-w)*(1-erlangCDF(b-1-i, lambda, w))
	}
	return within / meanK
}

// TestAnalyzeMatchesPoissonClosedForm checks the model's wait distribution (hence its latency
// CDF, W + S_K) against the closed form for Poisson arrivals, including λT ≫ B, where every
// batch fills within a few ms of a long timeout: at λ = 1000 req/s, B = 3, T = 0.49 s a grid of
// 64 steps (7.7 expected arrivals each) interpolated the CDF linearly and was off by 0.33
// (issue #18 item 7). The latency check uses a service time equal for all batch sizes, so that
// P(R ≤ t) = P(W ≤ t − S).
func TestAnalyzeMatchesPoissonClosedForm(t *testing.T) {
	for _, tc := range []struct {
		lambda  float64
		b       int
		timeout float64
	}{
		{1000, 3, 0.49},
		{1000, 20, 0.49},
		{200, 5, 0.3},
		{50, 5, 0.2},
		{10, 4, 0.3},
		{2, 8, 0.49},
	} {
		t.Run(fmt.Sprintf("λ=%g B=%d T=%g", tc.lambda, tc.b, tc.timeout), func(t *testing.T) {
			bt, err := Analyze(mustMAP(t)(Poisson(tc.lambda)), tc.b, tc.timeout, StartExact)
			if err != nil {
				t.Fatal(err)
			}
			worst, at := 0.0, 0.0
			for i := 0; i <= 4000; i++ {
				w := tc.timeout * float64(i) / 4000
				if d := math.Abs(bt.WaitCDF(w) - poissonWaitCDF(tc.lambda, tc.b, tc.timeout, w)); d > worst {
					worst, at = d, w
				}
			}
			const s = 1.5
			svc := make([]float64, tc.b)
			for k := range svc {
				svc[k] = s
			}
			q, err := bt.Quantile(svc, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			want := s + quantile(func(w float64) float64 { return poissonWaitCDF(tc.lambda, tc.b, tc.timeout, w) }, 0, tc.timeout, 0.95)
			t.Logf("sup |F_W − closed form| = %.4f at w = %.4f s; P95 %.5f s, closed form %.5f s", worst, at, q, want)
			if worst > 0.01 {
				t.Errorf("wait CDF off the closed form by %.4f at w = %.4f s (limit 0.01)", worst, at)
			}
			if math.Abs(q-want) > 1e-3*want {
				t.Errorf("P95: (-closed form +model) %.5f %.5f", want, q)
			}
		})
	}
}
