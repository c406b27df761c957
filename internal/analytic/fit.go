package analytic

import (
	"errors"
	"fmt"
	"math"
)

// ErrTooFewSamples reports a trace too short to fit a MAP.
var ErrTooFewSamples = errors.New("too few inter-arrival samples")

// TraceStats are the descriptors of an inter-arrival trace that FitMAP2 matches (BATCH §IV,
// "mean, square coefficient of variation, skewness, and lag-1 autocorrelation").
type TraceStats struct {
	// N is the number of inter-arrival samples.
	N int
	// Mean is the mean inter-arrival time in seconds; 1/Mean is the arrival rate per second.
	Mean float64
	// SCV is the squared coefficient of variation (1 for Poisson).
	SCV float64
	// Skew is the skewness (2 for Poisson).
	Skew float64
	// Rho1 is the lag-1 autocorrelation of consecutive inter-arrival times.
	Rho1 float64
}

// Describe returns the TraceStats of inter-arrival times in seconds.
func Describe(x []float64) (TraceStats, error) {
	if len(x) < 3 {
		return TraceStats{}, fmt.Errorf("%w: %d, need ≥ 3", ErrTooFewSamples, len(x))
	}
	n := float64(len(x))
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= n
	var m2, m3, c1 float64
	for i, v := range x {
		d := v - mean
		m2 += d * d
		m3 += d * d * d
		if i > 0 {
			c1 += d * (x[i-1] - mean)
		}
	}
	m2 /= n
	m3 /= n
	st := TraceStats{N: len(x), Mean: mean}
	if !(mean > 0) {
		return st, fmt.Errorf("fit MAP: mean inter-arrival %g s must be > 0", mean)
	}
	st.SCV = m2 / (mean * mean)
	if m2 > 0 {
		st.Skew = m3 / math.Pow(m2, 1.5)
		st.Rho1 = c1 / (n - 1) / m2
	}
	return st, nil
}

// FitMAP2 fits a two-phase MAP to inter-arrival times in seconds in the manner of the
// KPC-toolbox's second-order fit (Casale et al. [42, 60]): it matches the mean exactly, the
// SCV and the third moment (skewness) with a hyper-exponential H2 marginal, and the lag-1
// autocorrelation with the correlation parameter γ of the MAP
//
//	D0 = diag(−μ1, −μ2),  D1 = (−D0)·((1−γ)·1·α + γ·I),
//
// whose embedded phase chain keeps α stationary (so the marginal stays H2(α, μ)) and whose
// autocorrelation is ρ_k = γ^k·(1 − 1/SCV)/2; γ is clamped to the range that keeps D1 ≥ 0.
// When the third moment is below the H2 bound (m3 < 1.5·m2²/m1) it is raised to just above it;
// when SCV ≤ 1 the trace is less variable than Poisson and the fit is a renewal hypo-exponential
// (SCV ≥ 1/2) or Erlang-2, with no correlation: a MAP(2) cannot be both; above SCV 0.9 it is
// Poisson. A phase faster than 50× the mean rate falls back to the balanced-means H2. These edge rules keep
// the fitted mean rate exact, which is what the batch-size distribution is most sensitive to.
func FitMAP2(x []float64) (*MAP, TraceStats, error) {
	st, err := Describe(x)
	if err != nil {
		return nil, st, err
	}
	a, err := MAP2FromStats(st)
	return a, st, err
}

// MAP2FromStats builds the MAP(2) of FitMAP2 from trace descriptors.
func MAP2FromStats(st TraceStats) (*MAP, error) {
	m1 := st.Mean
	if !(m1 > 0) || math.IsInf(m1, 0) {
		return nil, fmt.Errorf("fit MAP: mean %g s must be > 0", m1)
	}
	scv := st.SCV
	if scv <= 1+1e-6 {
		return fitHypo(m1, scv)
	}
	// Reduced moments r_k = E[X^k]/k! of the two-point mixture of mean times x1, x2.
	r1 := m1
	r2 := (scv + 1) * m1 * m1 / 2
	sd := math.Sqrt(scv) * m1
	m3 := st.Skew*sd*sd*sd + 3*m1*sd*sd + m1*m1*m1
	r3 := m3 / 6
	if lo := r2 * r2 / r1 * 1.05; !(r3 > lo) { // H2 bound, with a margin against a vanishing phase
		r3 = lo
	}
	aa := (r3 - r1*r2) / (r2 - r1*r1)
	bb := aa*r1 - r2
	disc := aa*aa - 4*bb
	if !(bb > 0) || !(disc > 0) {
		return fitBalancedH2(m1, scv, st.Rho1)
	}
	x1 := (aa + math.Sqrt(disc)) / 2
	x2 := (aa - math.Sqrt(disc)) / 2
	p := (r1 - x2) / (x1 - x2)
	if !(p > 0 && p < 1) || !(x2 > 0) || m1/x2 > maxPhaseRatio {
		return fitBalancedH2(m1, scv, st.Rho1)
	}
	return correlatedH2(1/x1, 1/x2, p, scv, st.Rho1)
}

// fitBalancedH2 is the two-moment H2 with balanced means (p/μ1 = (1−p)/μ2), a fallback when the
// three-moment system has no positive solution.
func fitBalancedH2(m1, scv, rho1 float64) (*MAP, error) {
	p := (1 + math.Sqrt((scv-1)/(scv+1))) / 2
	return correlatedH2(2*p/m1, 2*(1-p)/m1, p, scv, rho1)
}

// correlatedH2 returns the MAP(2) with H2(α=(p, 1−p), μ) marginal and lag-1 autocorrelation as
// close to rho1 as D1 ≥ 0 allows.
func correlatedH2(mu1, mu2, p, scv, rho1 float64) (*MAP, error) {
	alpha := []float64{p, 1 - p}
	g := 0.0
	if scv > 1 {
		g = 2 * scv * rho1 / (scv - 1)
	}
	gmin := -math.Min(alpha[0]/(1-alpha[0]), alpha[1]/(1-alpha[1]))
	g = math.Max(gmin, math.Min(g, 0.999))
	mu := []float64{mu1, mu2}
	d0 := [][]float64{{-mu1, 0}, {0, -mu2}}
	d1 := make([][]float64, 2)
	for i := 0; i < 2; i++ {
		d1[i] = make([]float64, 2)
		for j := 0; j < 2; j++ {
			v := (1 - g) * alpha[j]
			if i == j {
				v += g
			}
			d1[i][j] = mu[i] * math.Max(0, v)
		}
	}
	return NewMAP(d0, d1)
}

// hypoPoissonSCV is the SCV above which a less-than-exponential trace is fitted as Poisson.
const hypoPoissonSCV = 0.9

// maxPhaseRatio bounds the ratio between a fitted phase's rate and the mean arrival rate: beyond
// it the three-moment H2 is degenerate (a phase that almost never lasts) and the two-moment
// balanced H2 is used instead.
const maxPhaseRatio = 50

// fitHypo fits a renewal process with SCV ≤ 1: an exponential (SCV ≈ 1), a hypo-exponential
// with two phases for SCV in [1/2, 1), or an Erlang-2 below.
func fitHypo(m1, scv float64) (*MAP, error) {
	// A hypo-exponential close to SCV 1 has a nearly instantaneous second phase (its rate grows
	// without bound as SCV → 1), which costs the optimiser a very fine time grid for nothing:
	// sample SCVs within 0.9–1 are indistinguishable from Poisson, so fit Poisson there.
	if scv > hypoPoissonSCV {
		return NewMAP([][]float64{{-1 / m1, 0}, {0, -1 / m1}}, [][]float64{{1 / m1, 0}, {0, 1 / m1}})
	}
	scv = math.Max(scv, 0.5)
	// Means x1 + x2 = m1, x1² + x2² = scv·m1².
	d := math.Sqrt(math.Max(0, 2*scv*m1*m1-m1*m1))
	x1, x2 := (m1+d)/2, (m1-d)/2
	mu1, mu2 := 1/x1, 1/x2
	return NewMAP([][]float64{{-mu1, mu1}, {0, -mu2}}, [][]float64{{0, 0}, {mu2, 0}})
}
