package ensemble

import "math"

// MajorityAccuracy is the accuracy model of Cocktail §4.1 and Appendix A: the probability that at
// least ⌊n/2⌋+1 of n independent models, each correct with probability a, are correct —
//
//	P = Σ_{i=⌊n/2⌋+1}^{n} C(n,i) a^i (1-a)^(n-i).
//
// MajorityAccuracy(10, 0.7) ≈ 0.8497 (the appendix prints 0.83 for this case; the sum is 0.8497).
// It returns 0 for n < 1 and clamps a to [0, 1].
func MajorityAccuracy(n int, a float64) float64 {
	if n < 1 {
		return 0
	}
	a = math.Min(1, math.Max(0, a))
	p := 0.0
	for i := n/2 + 1; i <= n; i++ {
		p += binom(n, i) * math.Pow(a, float64(i)) * math.Pow(1-a, float64(n-i))
	}
	return math.Min(1, p)
}

// binom returns C(n, k) as a float64.
func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	if k > n-k {
		k = n - k
	}
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

// EnsembleAccuracy generalises MajorityAccuracy to models of different accuracies (the
// Poisson-binomial distribution): the probability that more than half of the n independent
// models with the given accuracies are correct, plus half the probability that exactly half are
// (an even ensemble's tie, which the vote breaks by weight or order: a coin flip on average,
// where MajorityAccuracy counts it as wrong — with that, two models would score below one).
// With odd n and equal accuracies it equals MajorityAccuracy; Appendix A's use of the least
// accurate model's a is a lower bound of it. Cocktail §4.1 "creates a probabilistic ensemble"
// from each model's accuracy without fixing the formula for unequal accuracies; the exact
// distribution is cheap (O(n²)).
func EnsembleAccuracy(acc []float64) float64 {
	return majority(acc, nil, func(a float64) float64 { return a })
}

// majority returns the (tie-halved) majority probability of independent models correct with
// probabilities p(acc[i]); dist is scratch space of len(acc)+1 (nil allocates).
func majority(acc, dist []float64, p func(a float64) float64) float64 {
	n := len(acc)
	if n == 0 {
		return 0
	}
	if dist == nil {
		dist = make([]float64, n+1)
	}
	// dist[k] = P(exactly k correct among the models seen so far).
	clear(dist)
	dist[0] = 1
	for j, a := range acc {
		a = math.Min(1, math.Max(0, p(a)))
		for k := j + 1; k >= 1; k-- {
			dist[k] = dist[k]*(1-a) + dist[k-1]*a
		}
		dist[0] *= 1 - a
	}
	q := 0.0
	for k := n/2 + 1; k <= n; k++ {
		q += dist[k]
	}
	if n%2 == 0 {
		q += dist[n/2] / 2
	}
	return math.Min(1, q)
}

// The latent factor's quadrature for EnsembleAccuracyCorrelated: a trapezoid rule over
// s ∈ [−quadSpan, quadSpan] with quadPoints nodes (the weights are renormalised to sum to 1).
const (
	quadPoints = 61
	quadSpan   = 6.0
)

var quadS, quadW = func() ([]float64, []float64) {
	s, w := make([]float64, quadPoints), make([]float64, quadPoints)
	sum := 0.0
	for i := range s {
		s[i] = -quadSpan + 2*quadSpan*float64(i)/(quadPoints-1)
		w[i] = math.Exp(-s[i] * s[i] / 2)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return s, w
}()

// probit is Φ⁻¹(a), the standard normal quantile, for a clamped to (0, 1).
func probit(a float64) float64 {
	a = math.Min(1-1e-12, math.Max(1e-12, a))
	return math.Sqrt2 * math.Erfinv(2*a-1)
}

// normCDF is Φ(x).
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// EnsembleAccuracyCorrelated is EnsembleAccuracy for models whose correctness on one input is
// correlated through a one-factor Gaussian copula with latent correlation rho ∈ [0, 1): model m
// is right when √ρ·S + √(1−ρ)·ε_m < Φ⁻¹(a_m), with S (the input's difficulty, shared) and the
// ε_m independent standard normals — the model of the ensemble simulator (SimConfig.Correlation).
// Given S the models are independent, so the result is EnsembleAccuracy averaged over S. rho = 0
// is EnsembleAccuracy; as rho → 1 the models err together and the ensemble is no better than
// its median member. Fit rho to measured answers with FitCorrelation: the independence formula
// alone predicts 0.96 for three models scoring 0.89 whose errors in fact overlap.
func EnsembleAccuracyCorrelated(acc []float64, rho float64) float64 {
	if rho <= 0 {
		return EnsembleAccuracy(acc)
	}
	rho = math.Min(rho, 1-1e-9)
	z := make([]float64, len(acc))
	for i, a := range acc {
		z[i] = probit(a)
	}
	dist := make([]float64, len(acc)+1)
	sr, sc := math.Sqrt(rho), math.Sqrt(1-rho)
	p := 0.0
	for q, s := range quadS {
		p += quadW[q] * majority(z, dist, func(zm float64) float64 { return normCDF((zm - sr*s) / sc) })
	}
	return math.Min(1, p)
}

// bothRight is the copula's probability that two models of accuracies a and b are both right.
func bothRight(za, zb, rho float64) float64 {
	sr, sc := math.Sqrt(rho), math.Sqrt(1-rho)
	p := 0.0
	for q, s := range quadS {
		p += quadW[q] * normCDF((za-sr*s)/sc) * normCDF((zb-sr*s)/sc)
	}
	return p
}

// FitCorrelation returns the latent correlation ρ ∈ [0, 0.99] of EnsembleAccuracyCorrelated
// under which the models' mean pairwise probability of being right together matches the
// measured one: right[m][i] says whether model m answered input i correctly (every row the same
// length, ≥ 2 rows). Errors less correlated than independent ones give 0.
func FitCorrelation(right [][]bool) float64 {
	n := len(right)
	if n < 2 || len(right[0]) == 0 {
		return 0
	}
	inputs := len(right[0])
	z := make([]float64, n)
	for m, r := range right {
		c := 0
		for _, ok := range r {
			if ok {
				c++
			}
		}
		z[m] = probit(float64(c) / float64(inputs))
	}
	measured, pairs := 0.0, 0
	for i := range n {
		for j := i + 1; j < n; j++ {
			c := 0
			for k := range inputs {
				if right[i][k] && right[j][k] {
					c++
				}
			}
			measured += float64(c) / float64(inputs)
			pairs++
		}
	}
	measured /= float64(pairs)
	model := func(rho float64) float64 {
		p := 0.0
		for i := range n {
			for j := i + 1; j < n; j++ {
				p += bothRight(z[i], z[j], rho)
			}
		}
		return p / float64(pairs)
	}
	lo, hi := 0.0, 0.99
	if model(lo) >= measured {
		return 0
	}
	if model(hi) <= measured {
		return hi
	}
	for range 40 {
		mid := (lo + hi) / 2
		if model(mid) < measured {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
