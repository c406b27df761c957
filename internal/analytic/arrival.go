package analytic

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// ErrInvalidMAP reports matrices that do not form a Markovian arrival process.
var ErrInvalidMAP = errors.New("invalid MAP")

// MAP is a Markovian arrival process (D0, D1) with m phases and rates per second (BATCH §IV):
// D0 holds the hidden phase changes (negative diagonal), D1 the transitions that emit an arrival,
// and D0 + D1 is the generator of the phase process. A Poisson process is the MAP(1)
// (-λ, λ) (Eq. 4), an MMPP(2) has a diagonal D1 (Eq. 12) and a MAP(2) a full one (Eq. 16).
// A MAP is immutable once built.
type MAP struct {
	m      int
	d0, d1 []float64 // m×m row-major
}

// NewMAP returns the MAP with the given m×m matrices after checking that D1 ≥ 0, the off-diagonal
// of D0 is ≥ 0, every row of D0 + D1 sums to zero (to 1e-6 relative, as published fits are
// rounded) and the process emits arrivals.
func NewMAP(d0, d1 [][]float64) (*MAP, error) {
	m := len(d0)
	if m == 0 || len(d1) != m {
		return nil, fmt.Errorf("%w: D0 is %d×?, D1 is %d×?", ErrInvalidMAP, m, len(d1))
	}
	a := &MAP{m: m, d0: make([]float64, m*m), d1: make([]float64, m*m)}
	for i := 0; i < m; i++ {
		if len(d0[i]) != m || len(d1[i]) != m {
			return nil, fmt.Errorf("%w: row %d is not of length %d", ErrInvalidMAP, i, m)
		}
		sum, scale := 0.0, 0.0
		for j := 0; j < m; j++ {
			x0, x1 := d0[i][j], d1[i][j]
			if math.IsNaN(x0) || math.IsInf(x0, 0) || math.IsNaN(x1) || math.IsInf(x1, 0) {
				return nil, fmt.Errorf("%w: entry (%d,%d) is not finite", ErrInvalidMAP, i, j)
			}
			if x1 < 0 || (i != j && x0 < 0) {
				return nil, fmt.Errorf("%w: D1(%d,%d)=%g and off-diagonal D0(%d,%d)=%g must be ≥ 0", ErrInvalidMAP, i, j, x1, i, j, x0)
			}
			a.d0[i*m+j], a.d1[i*m+j] = x0, x1
			sum += x0 + x1
			scale = math.Max(scale, math.Abs(x0))
		}
		if d0[i][i] >= 0 {
			return nil, fmt.Errorf("%w: D0(%d,%d)=%g must be < 0", ErrInvalidMAP, i, i, d0[i][i])
		}
		if math.Abs(sum) > 1e-6*scale {
			return nil, fmt.Errorf("%w: row %d of D0+D1 sums to %g, not 0", ErrInvalidMAP, i, sum)
		}
		// Absorb the rounding of published fits into the diagonal so the generator is exact.
		a.d0[i*m+i] -= sum
	}
	if !(a.Rate() > 0) {
		return nil, fmt.Errorf("%w: the process emits no arrivals", ErrInvalidMAP)
	}
	return a, nil
}

// Poisson returns the MAP(1) of a Poisson process with rate lambda per second (Eq. 4).
func Poisson(lambda float64) (*MAP, error) {
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return nil, fmt.Errorf("%w: Poisson rate %g must be > 0", ErrInvalidMAP, lambda)
	}
	return NewMAP([][]float64{{-lambda}}, [][]float64{{lambda}})
}

// MMPP2 returns the two-phase Markov-modulated Poisson process of Eq. 12: arrivals at rate
// lambda1 (lambda2) in phase 1 (2), which it leaves at rate omega1 (omega2); rates per second.
func MMPP2(lambda1, lambda2, omega1, omega2 float64) (*MAP, error) {
	return NewMAP(
		[][]float64{{-(lambda1 + omega1), omega1}, {omega2, -(lambda2 + omega2)}},
		[][]float64{{lambda1, 0}, {0, lambda2}})
}

// MAP2 returns the two-phase MAP of Eq. 16: besides the MMPP(2) rates, an arrival in phase 1
// (2) moves the process to phase 2 (1) at rate lambda12 (lambda21).
func MAP2(lambda1, lambda2, lambda12, lambda21, omega1, omega2 float64) (*MAP, error) {
	return NewMAP(
		[][]float64{{-(lambda1 + lambda12 + omega1), omega1}, {omega2, -(lambda2 + lambda21 + omega2)}},
		[][]float64{{lambda1, lambda12}, {lambda21, lambda2}})
}

// Phases returns the number of phases m.
func (a *MAP) Phases() int { return a.m }

// D0 returns a copy of the hidden-transition matrix.
func (a *MAP) D0() [][]float64 { return rows(a.d0, a.m) }

// D1 returns a copy of the arrival-transition matrix.
func (a *MAP) D1() [][]float64 { return rows(a.d1, a.m) }

func rows(x []float64, m int) [][]float64 {
	out := make([][]float64, m)
	for i := range out {
		out[i] = append([]float64(nil), x[i*m:(i+1)*m]...)
	}
	return out
}

// phaseStationary returns θ with θ(D0+D1) = 0, θ1 = 1: the time-stationary phase distribution.
func (a *MAP) phaseStationary() []float64 {
	g := make([]float64, a.m*a.m)
	for i := range g {
		g[i] = a.d0[i] + a.d1[i]
	}
	return stationary(g, a.m, true)
}

// stationary solves x·G = 0 (generator) or x·P = x (stochastic, generator=false) with x·1 = 1
// by replacing one balance equation with the normalisation.
func stationary(g []float64, m int, generator bool) []float64 {
	if m == 1 {
		return []float64{1}
	}
	// Solve Gᵀ xᵀ = 0 with the last row replaced by ones.
	at := mat.NewDense(m, m, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			v := g[j*m+i]
			if !generator && i == j {
				v--
			}
			at.Set(i, j, v)
		}
	}
	for j := 0; j < m; j++ {
		at.Set(m-1, j, 1)
	}
	b := mat.NewVecDense(m, nil)
	b.SetVec(m-1, 1)
	var x mat.VecDense
	if err := x.SolveVec(at, b); err != nil {
		out := make([]float64, m)
		for i := range out {
			out[i] = 1 / float64(m)
		}
		return out
	}
	out := make([]float64, m)
	sum := 0.0
	for i := range out {
		out[i] = math.Max(0, x.AtVec(i))
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// Rate returns the fundamental (long-run mean) arrival rate θ·D1·1 in arrivals per second.
func (a *MAP) Rate() float64 {
	th := a.phaseStationary()
	r := 0.0
	for i := 0; i < a.m; i++ {
		for j := 0; j < a.m; j++ {
			r += th[i] * a.d1[i*a.m+j]
		}
	}
	return r
}

// embedded returns P = (-D0)^{-1}·D1, the phase transition matrix between arrivals, and
// M = (-D0)^{-1}, both m×m.
func (a *MAP) embedded() (p, minv []float64) {
	m := a.m
	nd0 := mat.NewDense(m, m, nil)
	for i := 0; i < m*m; i++ {
		nd0.Set(i/m, i%m, -a.d0[i])
	}
	var inv mat.Dense
	if err := inv.Inverse(nd0); err != nil {
		// -D0 is a non-singular M-matrix for every valid MAP; keep going with a pseudo-identity.
		inv.CloneFrom(mat.NewDiagDense(m, nil))
	}
	minv = make([]float64, m*m)
	for i := 0; i < m*m; i++ {
		minv[i] = inv.At(i/m, i%m)
	}
	p = make([]float64, m*m)
	matMul(p, minv, a.d1, m, m, m)
	return p, minv
}

// Moments returns the descriptors BATCH fits (§IV, "A MAP(2) is defined by four parameters"):
// the mean inter-arrival time in seconds, its squared coefficient of variation, its skewness and
// the lag-1 autocorrelation of consecutive inter-arrival times.
func (a *MAP) Moments() (mean, scv, skew, rho1 float64) {
	m := a.m
	p, minv := a.embedded()
	pi := stationary(p, m, false) // phase just after an arrival
	// E[X^k] = k! · π M^k 1.
	v := append([]float64(nil), pi...)
	var mom [4]float64
	tmp := make([]float64, m)
	fact := 1.0
	for k := 1; k <= 3; k++ {
		vecMat(tmp, v, minv, m, m)
		copy(v, tmp)
		fact *= float64(k)
		s := 0.0
		for _, x := range v {
			s += x
		}
		mom[k] = fact * s
	}
	mean = mom[1]
	vari := mom[2] - mean*mean
	scv = vari / (mean * mean)
	sd := math.Sqrt(vari)
	skew = (mom[3] - 3*mean*vari - mean*mean*mean) / (sd * sd * sd)
	// E[X0 X1] = π M P M 1.
	vecMat(tmp, pi, minv, m, m)
	t2 := make([]float64, m)
	vecMat(t2, tmp, p, m, m)
	vecMat(tmp, t2, minv, m, m)
	e01 := 0.0
	for _, x := range tmp {
		e01 += x
	}
	if vari > 0 {
		rho1 = (e01 - mean*mean) / vari
	}
	return mean, scv, skew, rho1
}

// Sampler draws successive inter-arrival times of a MAP, keeping the phase between draws.
// It is not safe for concurrent use.
type Sampler struct {
	a     *MAP
	rng   *rand.Rand
	phase int
}

// NewSampler returns a sampler of a whose first phase is drawn from the time-stationary phase
// distribution; rng supplies the randomness (use a seeded one for reproducible runs).
func NewSampler(a *MAP, rng *rand.Rand) *Sampler {
	th := a.phaseStationary()
	u, ph := rng.Float64(), 0
	for ph < a.m-1 && u > th[ph] {
		u -= th[ph]
		ph++
	}
	return &Sampler{a: a, rng: rng, phase: ph}
}

// Next returns the time in seconds from the previous arrival to the next one.
func (s *Sampler) Next() float64 {
	m := s.a.m
	t := 0.0
	for {
		i := s.phase
		out := -s.a.d0[i*m+i]
		t += s.rng.ExpFloat64() / out
		u := s.rng.Float64() * out
		for j := 0; j < m; j++ {
			if u < s.a.d1[i*m+j] {
				s.phase = j
				return t
			}
			u -= s.a.d1[i*m+j]
		}
		for j := 0; j < m; j++ {
			if j == i {
				continue
			}
			if u < s.a.d0[i*m+j] {
				s.phase = j
				break
			}
			u -= s.a.d0[i*m+j]
		}
	}
}

// ReadMatrix reads a square matrix written as one comma- (or space-) separated row per line,
// as in BATCH's published MAPh_D0 / MAPh_D1 files; blank lines and lines starting with # are
// skipped.
func ReadMatrix(r io.Reader) ([][]float64, error) {
	var out [][]float64
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == ';' })
		row := make([]float64, 0, len(fields))
		for _, f := range fields {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("read matrix: line %d: bad number %q", line, f)
			}
			row = append(row, v)
		}
		if len(out) > 0 && len(row) != len(out[0]) {
			return nil, fmt.Errorf("read matrix: line %d has %d columns, want %d", line, len(row), len(out[0]))
		}
		out = append(out, row)
		if len(out) > 64 {
			return nil, fmt.Errorf("read matrix: more than 64 rows")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read matrix: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read matrix: empty")
	}
	if len(out) != len(out[0]) {
		return nil, fmt.Errorf("read matrix: %d×%d is not square", len(out), len(out[0]))
	}
	return out, nil
}

// ReadMAP reads D0 and D1 with ReadMatrix and returns the MAP they define.
func ReadMAP(d0, d1 io.Reader) (*MAP, error) {
	m0, err := ReadMatrix(d0)
	if err != nil {
		return nil, fmt.Errorf("D0: %w", err)
	}
	m1, err := ReadMatrix(d1)
	if err != nil {
		return nil, fmt.Errorf("D1: %w", err)
	}
	return NewMAP(m0, m1)
}

// ReadInterarrivals reads one inter-arrival time in seconds per line (the format of the Twitter
// hour files); blank lines and lines starting with # are skipped, negative or non-finite values
// are errors.
func ReadInterarrivals(r io.Reader) ([]float64, error) {
	var out []float64
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("read inter-arrivals: line %d: bad value %q", line, s)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read inter-arrivals: %w", err)
	}
	return out, nil
}
