package trace

import (
	"fmt"
	"math"
	"time"
)

// MAP2 is a two-phase Markovian Arrival Process (BATCH §IV, "MAP(2) arrival process", Eq. 11; MMPP(2)
// is the special case without phase changes at arrivals): D0 holds the phase
// transition rates without an arrival (negative diagonal), D1 those with an arrival, both in
// events per second; D0 + D1 is a generator (rows sum to 0). MMPP(2) and Poisson are special
// cases. The BATCH repository's fits of the Twitter and NYS traces are read by ReadMAP2.
type MAP2 struct {
	D0, D1 [2][2]float64
}

// MMPP2 returns the two-state Markov-modulated Poisson process with arrival rates lambda1,
// lambda2 (per second) in states 1, 2, switching from 1 to 2 at rate r12 and back at r21.
func MMPP2(lambda1, lambda2, r12, r21 float64) MAP2 {
	return MAP2{
		D0: [2][2]float64{{-lambda1 - r12, r12}, {r21, -lambda2 - r21}},
		D1: [2][2]float64{{lambda1, 0}, {0, lambda2}},
	}
}

// Validate checks that the matrices form a MAP: finite entries, D1 and the off-diagonal of D0
// non-negative, D0's diagonal negative, and rows of D0 + D1 summing to 0 within 1e-4 of the
// row's total rate (published fits are rounded to six decimals).
func (m MAP2) Validate() error {
	for i := range 2 {
		var sum, scale float64
		for j := range 2 {
			d0, d1 := m.D0[i][j], m.D1[i][j]
			if math.IsNaN(d0) || math.IsInf(d0, 0) || math.IsNaN(d1) || math.IsInf(d1, 0) {
				return fmt.Errorf("map2: D0[%d][%d]=%v or D1[%d][%d]=%v is not finite", i, j, d0, i, j, d1)
			}
			if d1 < 0 {
				return fmt.Errorf("map2: D1[%d][%d] must be ≥ 0, got %v", i, j, d1)
			}
			if i != j && d0 < 0 {
				return fmt.Errorf("map2: D0[%d][%d] must be ≥ 0, got %v", i, j, d0)
			}
			sum += d0 + d1
		}
		if !(m.D0[i][i] < 0) {
			return fmt.Errorf("map2: D0[%d][%d] must be < 0, got %v", i, i, m.D0[i][i])
		}
		scale = -m.D0[i][i]
		if math.Abs(sum) > 1e-4*scale {
			return fmt.Errorf("map2: row %d of D0+D1 sums to %v, want 0", i, sum)
		}
	}
	if m.D1[0][0]+m.D1[0][1]+m.D1[1][0]+m.D1[1][1] <= 0 {
		return fmt.Errorf("map2: D1 is all zero: no arrivals")
	}
	return nil
}

// phaseStationary returns π with π(D0+D1) = 0, π1 = 1.
func (m MAP2) phaseStationary() [2]float64 {
	q01 := m.D0[0][1] + m.D1[0][1] // rate 0 → 1
	q10 := m.D0[1][0] + m.D1[1][0] // rate 1 → 0
	if q01+q10 == 0 {
		return [2]float64{0.5, 0.5}
	}
	return [2]float64{q10 / (q01 + q10), q01 / (q01 + q10)}
}

// Rate returns the mean arrival rate λ = π D1 1, per second.
func (m MAP2) Rate() float64 {
	p := m.phaseStationary()
	return p[0]*(m.D1[0][0]+m.D1[0][1]) + p[1]*(m.D1[1][0]+m.D1[1][1])
}

// Lag1 returns the lag-1 autocorrelation of the inter-arrival times,
// ρ1 = (φ M P M 1 − E[X]²) / (E[X²] − E[X]²), with M = (−D0)⁻¹, P = M D1 and φ = π D1 / λ the
// phase seen just after an arrival.
func (m MAP2) Lag1() float64 {
	a, b, c, d := -m.D0[0][0], -m.D0[0][1], -m.D0[1][0], -m.D0[1][1]
	det := a*d - b*c
	M := [2][2]float64{{d / det, -b / det}, {-c / det, a / det}}
	mul := func(x, y [2][2]float64) [2][2]float64 {
		var z [2][2]float64
		for i := range 2 {
			for j := range 2 {
				z[i][j] = x[i][0]*y[0][j] + x[i][1]*y[1][j]
			}
		}
		return z
	}
	vec := func(x [2][2]float64, v [2]float64) [2]float64 { // x·v
		return [2]float64{x[0][0]*v[0] + x[0][1]*v[1], x[1][0]*v[0] + x[1][1]*v[1]}
	}
	pi := m.phaseStationary()
	lam := m.Rate()
	phi := [2]float64{(pi[0]*m.D1[0][0] + pi[1]*m.D1[1][0]) / lam, (pi[0]*m.D1[0][1] + pi[1]*m.D1[1][1]) / lam}
	dot := func(u, v [2]float64) float64 { return u[0]*v[0] + u[1]*v[1] }
	one := [2]float64{1, 1}
	m1v := vec(M, one)
	ex := dot(phi, m1v)
	ex2 := 2 * dot(phi, vec(M, m1v))
	P := mul(M, m.D1)
	exy := dot(phi, vec(M, vec(P, m1v)))
	v := ex2 - ex*ex
	if v <= 0 {
		return 0
	}
	return (exy - ex*ex) / v
}

// Arrivals returns the MAP's arrival process starting in its stationary phase, deterministic for
// seed; it never ends (wrap it with Until or Take). m must be valid.
func (m MAP2) Arrivals(seed uint64) Source {
	rng := newRand(seed)
	phase := 0
	if rng.Float64() >= m.phaseStationary()[0] {
		phase = 1
	}
	var t time.Duration
	return SourceFunc(func() (time.Duration, bool) {
		for {
			out := -m.D0[phase][phase]
			t += expGap(rng, out)
			// Leave the phase: hidden move (D0 off-diagonal) or arrival to phase j (D1[phase][j]).
			u := rng.Float64() * out
			other := 1 - phase
			if u < m.D0[phase][other] {
				phase = other
				continue
			}
			u -= m.D0[phase][other]
			if u >= m.D1[phase][phase] {
				phase = other
			}
			return t, true
		}
	})
}

// PiecewiseMAP returns the arrivals of maps[i] during [i·period, (i+1)·period) — a day replayed
// from hourly MAP fits, as BATCH fits one MAP per hour of its traces — ending after the last
// period. At a boundary the next MAP continues from the current phase (the fits' phases are
// exchangeable labels, so this is a choice; it keeps the generator pull-based and exact within
// each period). Every map must be valid; seed makes it deterministic.
func PiecewiseMAP(maps []MAP2, period time.Duration, seed uint64) Source {
	rng := newRand(seed)
	var (
		k     int // current period
		phase int
		t     time.Duration
	)
	if len(maps) > 0 && rng.Float64() >= maps[0].phaseStationary()[0] {
		phase = 1
	}
	return SourceFunc(func() (time.Duration, bool) {
		for k < len(maps) && period > 0 {
			m := &maps[k]
			end := time.Duration(k+1) * period
			out := -m.D0[phase][phase]
			g := rng.ExpFloat64() / out * 1e9
			if g >= float64(end-t) {
				t, k = end, k+1 // memoryless: restart the sojourn at the boundary
				continue
			}
			t += time.Duration(g)
			u := rng.Float64() * out
			other := 1 - phase
			if u < m.D0[phase][other] {
				phase = other
				continue
			}
			if u-m.D0[phase][other] >= m.D1[phase][phase] {
				phase = other
			}
			return t, true
		}
		return 0, false
	})
}
