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
// Poisson-binomial distribution): the probability that at least ⌊n/2⌋+1 of the n independent
// models with the given accuracies are correct. With equal accuracies it equals
// MajorityAccuracy; Appendix A's use of the least accurate model's a is a lower bound of it.
// Cocktail §4.1 "creates a probabilistic ensemble" from each model's accuracy without fixing the
// formula for unequal accuracies; the exact distribution is cheap (O(n²)) and never looser.
func EnsembleAccuracy(acc []float64) float64 {
	n := len(acc)
	if n == 0 {
		return 0
	}
	// dist[k] = P(exactly k correct among the models seen so far).
	dist := make([]float64, n+1)
	dist[0] = 1
	for j, a := range acc {
		a = math.Min(1, math.Max(0, a))
		for k := j + 1; k >= 1; k-- {
			dist[k] = dist[k]*(1-a) + dist[k-1]*a
		}
		dist[0] *= 1 - a
	}
	p := 0.0
	for k := n/2 + 1; k <= n; k++ {
		p += dist[k]
	}
	return math.Min(1, p)
}
