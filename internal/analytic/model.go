package analytic

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// ErrOffGrid reports a timeout that is not a multiple of a Model's time step.
var ErrOffGrid = errors.New("timeout is not on the model's time grid")

// StartPhase selects how the phase of the arrival process is distributed when the first request
// of a batch arrives (π(0) of Eq. 5).
type StartPhase int

const (
	// StartExact computes the stationary distribution of the embedded chain "phase at the start
	// of batch n → phase at the start of batch n+1": the phase at dispatch (min of the timeout and
	// the filling time) follows from e^{QT}, and the first arrival after the dispatch moves it by
	// (-D0)^{-1}·D1. It is exact for the buffer of §III-B and the default.
	StartExact StartPhase = iota
	// StartPaper uses Eqs. 13–14: α_m = (λ_m/ω_m) / min(B, λ_m·T + 1). It is a heuristic that
	// ignores the correlation between phases and batch lengths; kept to reproduce the paper.
	StartPaper
)

// Model is the buffer CTMC of BATCH §IV for one arrival process and one maximum batch size B,
// solved on a uniform time grid so that every timeout on the grid is evaluated at the cost of a
// few vector–matrix products. The state (ℓ, φ) is "ℓ+1 requests in the buffer, arrival phase φ",
// ℓ = 0..B-1; the generator Q has D0 on the diagonal blocks, D1 on the super-diagonal blocks and
// a zero last block (Eq. 4 for Poisson, Eq. 11 with Eq. 12 for MMPP(2) and Eq. 16 for MAP(2)):
// the buffer is dispatched when it holds B requests.
//
// Beyond the batch-size distribution of Eqs. 5–8, Model gives the exact joint distribution of a
// random request's batch size K and buffer wait W, which the paper approximates (Eq. 9: uniform
// waits, τ of Eqs. 10/15). A request that arrives at time a after the batch opened, with the
// buffer then in state s, waits W = T − a if the batch times out, and the time to B requests
// otherwise. Summing over all requests (request-weighted, Eq. 8) is a Van Loan integral: with
// A the arrival part of Q,
//
//	P(K=k, W≤w, K<B)·E[K] = π(0)e^{Q(T−w)}·H(w)·1_{level k−1}          (tagged in the last w)
//	P(K=B, W≤w)·E[K]      = π(0)Ψ(T−w)·A·c(w) + π(0)e^{Q(T−w)}H(w)1_full + π(0)c(w)
//
// where H(w) is the upper-right block of exp([[Q, A], [0, Q]]·w), Ψ(a) = ∫₀ᵃ e^{Qs}ds (upper-right
// block of exp([[Q, I], [0, 0]]·a)), c(w) = e^{Qw}·1_full, and the first request adds an atom at
// W = T when its batch times out. None of these depend on T, so the grid is built once per B.
// A Model is immutable after NewModel and safe for concurrent use.
type Model struct {
	arr  *MAP
	b, m int // max batch, phases
	n    int // states b·m
	h    float64
	nmax int // grid points 0..nmax
	// Per grid point g (time g·h):
	f    [][]float64 // m×n: row i = e_{(0,i)}·e^{Q g h}
	psiA [][]float64 // m×n: row i = e_{(0,i)}·Ψ(g h)·A
	// levelsAt's quantities (m×b each): with N the arrivals in g·h from phase i,
	// dMass[i·b+d] = d·P(N = d) (d < b−1), tail[i·b+d] = P(N ≥ d), dTail[i·b+d] = d·P(N ≥ d).
	dMass, tail, dTail [][]float64
	emb                []float64 // (-D0)^{-1}·D1
	// rate is the arrivals' fundamental rate (MAP.Rate, a linear solve): tau's denominator,
	// once per model instead of once per timeout (0.8 % of the scoreboard's CPU, issue #17).
	rate float64
	// q and arrA are Q and its arrival part A; once builds psiA and the level quantities
	// (tagging), which only the wait distribution needs.
	q, arrA []float64
	once    sync.Once
}

// NewModel builds the model of arrivals a and maximum batch size maxBatch on the grid
// 0, step, 2·step, …, horizon (seconds); every timeout evaluated later must be on that grid.
// The cost is O((horizon/step)·m·(m·B)²) for the batch-size law and as much again, once, for
// the wait distribution (Model.tagging).
func NewModel(a *MAP, maxBatch int, step, horizon float64) (*Model, error) {
	switch {
	case a == nil:
		return nil, fmt.Errorf("analytic model: nil arrival process")
	case maxBatch < 1 || maxBatch > 1024:
		return nil, fmt.Errorf("analytic model: max batch %d must be in [1, 1024]", maxBatch)
	case !(step > 0) || math.IsInf(step, 0):
		return nil, fmt.Errorf("analytic model: step %g s must be > 0", step)
	case !(horizon >= 0) || horizon/step > 1e5:
		return nil, fmt.Errorf("analytic model: horizon %g s must be in [0, 1e5·step]", horizon)
	}
	m := a.m
	b := maxBatch
	n := b * m
	md := &Model{arr: a, b: b, m: m, n: n, h: step, nmax: int(math.Round(horizon / step)), rate: a.Rate()}
	q := make([]float64, n*n)
	arr := make([]float64, n*n)
	for l := 0; l < b-1; l++ {
		for i := 0; i < m; i++ {
			for j := 0; j < m; j++ {
				q[(l*m+i)*n+l*m+j] = a.d0[i*m+j]
				q[(l*m+i)*n+(l+1)*m+j] = a.d1[i*m+j]
				arr[(l*m+i)*n+(l+1)*m+j] = a.d1[i*m+j]
			}
		}
	}
	md.q, md.arrA = q, arr
	e1 := expm(q, n, step)
	md.emb, _ = a.embedded()
	np := md.nmax + 1
	md.f = make([][]float64, np)
	// One backing array per quantity instead of slices per grid point (allocation was a sixth
	// of NewModel's time in the scoreboard's profile).
	fs := make([]float64, np*m*n)
	f0 := fs[: m*n : m*n]
	for i := 0; i < m; i++ {
		f0[i*n+i] = 1
	}
	md.f[0] = f0
	// The fixed right-hand factor's non-zero spans, found once (see span).
	e1S := spans(e1, n, n)
	for g := 0; g+1 < np; g++ {
		nextF := fs[(g+1)*m*n : (g+2)*m*n : (g+2)*m*n]
		matMulSpan(nextF, md.f[g], e1, m, n, n, e1S)
		md.f[g+1] = nextF
	}
	return md, nil
}

// tagging builds, once, what only the wait distribution needs (Batching.fill): Ψ(g·h)·A and
// the level quantities per grid point. The batch-size law (Model.law) needs f alone, and the
// optimiser rules most candidates out on it (attainmentBound), so a model whose candidates are
// all ruled out never builds them.
func (md *Model) tagging() { md.once.Do(md.buildTagging) }

func (md *Model) buildTagging() {
	m, b, n := md.m, md.b, md.n
	psi1 := upperRight(expm(block(md.q, identity(n), nil, n), 2*n, md.h), n)
	np := md.nmax + 1
	md.psiA = make([][]float64, np)
	md.dMass, md.tail, md.dTail = make([][]float64, np), make([][]float64, np), make([][]float64, np)
	pas := make([]float64, np*m*n)
	dms, ts, dts := make([]float64, np*m*b), make([]float64, np*m*b), make([]float64, np*m*b)
	at := func(all []float64, g, size int) []float64 { return all[g*size : (g+1)*size : (g+1)*size] }
	psi := make([]float64, m*n) // Ψ(0) = 0
	nextPsi := make([]float64, m*n)
	arrS, psi1S := spans(md.arrA, n, n), spans(psi1, n, n)
	for g := 0; g < np; g++ {
		pa := at(pas, g, m*n)
		matMulSpan(pa, psi, md.arrA, m, n, n, arrS)
		md.psiA[g] = pa
		md.dMass[g], md.tail[g], md.dTail[g] = at(dms, g, m*b), at(ts, g, m*b), at(dts, g, m*b)
		md.levels(g)
		if g == np-1 {
			break
		}
		matMulSpan(nextPsi, md.f[g], psi1, m, n, n, psi1S)
		for i := range nextPsi {
			nextPsi[i] += psi[i]
		}
		psi, nextPsi = nextPsi, psi
	}
}

// levels fills grid point g's level quantities from f[g]. Only row block 0 of e^{Qt} is kept
// (f): below the full level the buffer's levels are translation invariant (Q's blocks depend on
// the level difference only), so from state (ℓ, i) the level k < B−1 is reached at t with the
// probability P_i(N(t) = k−ℓ) of row (0, i), and the full level B−1 with P_i(N(t) ≥ B−1−ℓ);
// e^{Qt}·L (L: state → level indicator) is this Toeplitz matrix. The Van Loan integral H(t) of
// the arrival part A counts the arrivals on the way (H_{xy}(t) = E_x[arrivals in [0, t]; X(t) =
// y]), and every arrival raises the level by one, so H(t)·L is e^{Qt}·L with each entry
// weighted by the level difference k−ℓ. NewModel once built both as n×B matrices by n×n
// products per grid point (B times the work of f; 56 % of the week-long Azure runs, issue #17);
// the identity makes them O(m·B) per grid point. Same values up to rounding (≤ 1e-15).
func (md *Model) levels(g int) {
	m, n, b := md.m, md.n, md.b
	f, dMass, tail, dTail := md.f[g], md.dMass[g], md.tail[g], md.dTail[g]
	for i := 0; i < m; i++ {
		mass := tail[i*b : (i+1)*b] // P(N = d) first, made into the tail below
		for d := 0; d < b; d++ {
			s := 0.0
			for _, x := range f[i*n+d*m : i*n+(d+1)*m] {
				s += x
			}
			mass[d] = s
			if d < b-1 {
				dMass[i*b+d] = float64(d) * s
			}
		}
		for d := b - 2; d >= 0; d-- {
			mass[d] += mass[d+1] // the full level holds P(N ≥ B−1)
		}
		for d := 0; d < b; d++ {
			dTail[i*b+d] = float64(d) * mass[d]
		}
	}
}

// tagged sets y[k] = x·H(u·h)·L, the column k of the tagged requests' term of At, for a row
// vector x over the states (levels.'s identity: Σ_{ℓ,i} x_{ℓ,i}·(k−ℓ)·P_i(N = k−ℓ), and for the
// full level B−1 the weight (B−1−ℓ)·P_i(N ≥ B−1−ℓ)).
func (md *Model) tagged(y, x []float64, u int) {
	m, b := md.m, md.b
	clear(y)
	dMass, dTail := md.dMass[u], md.dTail[u]
	for l := 0; l < b-1; l++ {
		for i := 0; i < m; i++ {
			v := x[l*m+i]
			if v == 0 {
				continue
			}
			src := dMass[i*b+1 : i*b+b-1-l]
			out := y[l+1 : b-1]
			for k, w := range src {
				out[k] += v * w
			}
			y[b-1] += v * dTail[i*b+b-1-l]
		}
	}
}

// MaxBatch returns B.
func (md *Model) MaxBatch() int { return md.b }

// Step returns the grid step in seconds.
func (md *Model) Step() float64 { return md.h }

// Horizon returns the largest timeout on the grid, in seconds.
func (md *Model) Horizon() float64 { return float64(md.nmax) * md.h }

// At returns the batch-size and latency model for timeout T seconds, which must be a multiple of
// the grid step within the horizon (ErrOffGrid otherwise). T = 0 dispatches every request alone.
func (md *Model) At(timeout float64, start StartPhase) (*Batching, error) {
	bt, err := md.law(timeout, start)
	if err != nil {
		return nil, err
	}
	bt.fill()
	return bt, nil
}

// law is At without the wait distribution: the batch-size law (pmf, E[K], ρ and the atom at
// T), which costs one vector per timeout; Batching.fill adds the wait distribution (the
// O(T/h·B²·m) part) when a caller needs it. Only this package sees an unfilled Batching.
func (md *Model) law(timeout float64, start StartPhase) (*Batching, error) {
	j := int(math.Round(timeout / md.h))
	if timeout < 0 || j > md.nmax || math.Abs(float64(j)*md.h-timeout) > 1e-9*math.Max(1, timeout) {
		return nil, fmt.Errorf("%w: timeout %g s, step %g s, horizon %g s", ErrOffGrid, timeout, md.h, md.Horizon())
	}
	b, m, n := md.b, md.m, md.n
	bt := &Batching{b: b, timeout: float64(j) * md.h, h: md.h, j: j, tau: md.tau()}
	if j == 0 || b == 1 {
		// Every request is dispatched on arrival, alone.
		bt.pmf = make([]float64, b)
		bt.pmf[0] = 1
		bt.meanK = 1
		bt.cdf = make([][]float64, b)
		bt.atom = make([]float64, b)
		for k := range bt.cdf {
			bt.cdf[k] = make([]float64, j+1)
		}
		// W = 0 for everyone: the whole mass sits in k = 1 from the first grid point on.
		for u := range bt.cdf[0] {
			bt.cdf[0][u] = 1
		}
		bt.total = make([]float64, b)
		bt.total[0] = 1
		bt.start = []float64{1}
		return bt, nil
	}
	nu := md.startPhase(j, start)
	bt.start = nu
	fT := md.mix(make([]float64, n), nu, j)
	bt.pmf = make([]float64, b)
	for s, x := range fT {
		bt.pmf[s/m] += x
	}
	normalise(bt.pmf)
	for k, p := range bt.pmf {
		bt.meanK += float64(k+1) * p
	}
	bt.atom = make([]float64, b)
	bt.total = make([]float64, b)
	for k := 0; k < b-1; k++ {
		bt.atom[k] = bt.pmf[k] // the first request of a batch that times out waits exactly T
	}
	for k := 0; k < b; k++ {
		bt.atom[k] /= bt.meanK
		bt.total[k] = float64(k+1) * bt.pmf[k] / bt.meanK
	}
	bt.lazy = md
	return bt, nil
}

// mix sets out to nu·f[g] (the state distribution at g·h from start phases nu) and returns it.
func (md *Model) mix(out, nu []float64, g int) []float64 {
	m, n := md.m, md.n
	clear(out)
	for i := 0; i < m; i++ {
		if nu[i] == 0 {
			continue
		}
		row := md.f[g][i*n : (i+1)*n]
		for s, x := range row {
			out[s] += nu[i] * x
		}
	}
	return out
}

// fill computes the wait distribution of a law from its model (a no-op once done). One
// goroutine owns an unfilled Batching.
func (bt *Batching) fill() {
	md := bt.lazy
	if md == nil {
		return
	}
	bt.lazy = nil
	md.tagging()
	b, j := md.b, bt.j
	bt.cdf = make([][]float64, b)
	// The columns lazyLatencyCDF kept are the ones computed here (waitAt computes each grid point
	// by itself, bit for bit the same).
	cdfs, have := bt.kept, bt.have
	bt.kept, bt.have = nil, nil
	if cdfs == nil {
		cdfs = make([]float64, b*(j+1))
	}
	for k := range bt.cdf {
		bt.cdf[k] = cdfs[k*(j+1) : (k+1)*(j+1) : (k+1)*(j+1)]
	}
	// The buffers are reused across grid points: allocating them per grid point was a tenth
	// of the scoreboard's CPU (pprof).
	w := md.newWaitScratch()
	for u := 0; u <= j; u++ {
		if have != nil && have[u] {
			continue
		}
		y := md.waitAt(bt, u, w)
		for k := 0; k < b; k++ {
			bt.cdf[k][u] = y[k]
		}
	}
}

// waitScratch holds waitAt's buffers.
type waitScratch struct{ buf, y, pa []float64 }

func (md *Model) newWaitScratch() waitScratch {
	return waitScratch{buf: make([]float64, md.n), y: make([]float64, md.b), pa: make([]float64, md.n)}
}

// waitAt returns the column u of the law's (unfilled or not) wait distribution, cdf[k][u] for
// every k, computed as fill computes it — each grid point independently of the others, so the
// values are bit-identical to fill's. The model's tagging must be built.
func (md *Model) waitAt(bt *Batching, u int, w waitScratch) []float64 {
	b, m, j, nu := md.b, md.m, bt.j, bt.start
	x := md.mix(w.buf, nu, j-u)
	y := w.y
	md.tagged(y, x, u)
	// Full batches: tags at s ≤ T−u that fill within u, and the first request.
	md.mixPsiA(w.pa, nu, j-u)
	tail := md.tail[u] // P(full within u·h | state (ℓ, i)) = tail[i·b + B−1−ℓ]
	extra := 0.0
	for l := 0; l < b; l++ {
		for i, v := range w.pa[l*m : (l+1)*m] {
			extra += v * tail[i*b+b-1-l]
		}
	}
	for i := 0; i < m; i++ {
		extra += nu[i] * tail[i*b+b-1]
	}
	y[b-1] += extra
	for k := range y {
		y[k] /= bt.meanK
	}
	return y
}

// mixPsiA sets out to nu·Ψ(g·h)·A.
func (md *Model) mixPsiA(out, nu []float64, g int) {
	m, n := md.m, md.n
	clear(out)
	for i := 0; i < m; i++ {
		if nu[i] == 0 {
			continue
		}
		for s, v := range md.psiA[g][i*n : (i+1)*n] {
			out[s] += nu[i] * v
		}
	}
}

// startPhase returns π(0) restricted to level 0 (a distribution over phases).
func (md *Model) startPhase(j int, start StartPhase) []float64 {
	m, n, b := md.m, md.n, md.b
	if m == 1 {
		return []float64{1}
	}
	a := md.arr
	if start == StartPaper {
		alpha := make([]float64, m)
		sum := 0.0
		for i := 0; i < m; i++ {
			lam := a.d1[i*m+i]
			omega := -(a.d0[i*m+i] + a.d1[i*m+i])
			ev := math.Inf(1)
			if omega > 0 {
				ev = lam / omega
			}
			alpha[i] = ev / math.Min(float64(b), lam*float64(j)*md.h+1)
			sum += alpha[i]
		}
		if sum > 0 && !math.IsInf(sum, 0) && !math.IsNaN(sum) {
			for i := range alpha {
				alpha[i] /= sum
			}
			return alpha
		}
		// Degenerate phases (ω = 0): fall through to the exact distribution.
	}
	phi := make([]float64, m*m) // start phase → phase at dispatch
	for i := 0; i < m; i++ {
		row := md.f[j][i*n : (i+1)*n]
		for s, x := range row {
			phi[i*m+s%m] += x
		}
	}
	p := make([]float64, m*m)
	matMul(p, phi, md.emb, m, m, m)
	return stationary(p, m, false)
}

// tau is the paper's mean time to collect B−1 requests after the first, (B−1)/λ̄: Eq. 10 for
// Poisson and Eq. 15 for MMPP(2), whose denominator is exactly the MMPP's mean rate; for a MAP we
// use its fundamental rate, the same quantity.
func (md *Model) tau() float64 { return float64(md.b-1) / md.rate }

func normalise(p []float64) {
	s := 0.0
	for i, x := range p {
		if x < 0 {
			p[i] = 0
			x = 0
		}
		s += x
	}
	if s > 0 {
		for i := range p {
			p[i] /= s
		}
	}
}

// Analyze returns the model of arrivals a with max batch maxBatch and timeout seconds, on a grid
// fine enough for the arrival rates (at least 16 steps per timeout and at most 0.25 expected
// arrivals of the fastest phase each, within GridSteps' work budget).
func Analyze(a *MAP, maxBatch int, timeout float64, start StartPhase) (*Batching, error) {
	if !(timeout >= 0) || math.IsInf(timeout, 0) {
		return nil, fmt.Errorf("analytic model: timeout %g s must be ≥ 0", timeout)
	}
	if timeout == 0 {
		md, err := NewModel(a, maxBatch, 1, 0)
		if err != nil {
			return nil, err
		}
		return md.At(0, start)
	}
	steps := GridSteps(a, maxBatch, timeout, 1, 16)
	md, err := NewModel(a, maxBatch, timeout/float64(steps), timeout)
	if err != nil {
		return nil, err
	}
	return md.At(timeout, start)
}

// Work budget of one Model's grid (GridSteps): about maxGridFlops floating-point operations to
// build it and maxGridFloats stored numbers (8 bytes each). A budget on total work, not on the
// step count, keeps the grid fine where the model is cheap (small B·m: 2,000 steps of B = 3 cost
// less than 64 of B = 20) and bounds it where it is not.
const (
	maxGridFlops  = 5e8
	maxGridFloats = 1.6e7
)

// GridSteps returns how many grid steps to cut each of intervals intervals of the given seconds
// into, for a Model of a with max batch maxBatch whose grid spans all of them: at least minSteps
// and enough that no step exceeds 0.25 expected events of the fastest phase, so that the linear
// interpolation of the wait distribution between grid points stays accurate — unless the whole
// grid would then exceed the work budget (maxGridFlops to build, maxGridFloats to store), in
// which case it is the most steps the budget allows (never fewer than minSteps).
func GridSteps(a *MAP, maxBatch int, interval float64, intervals, minSteps int) int {
	lmax := 0.0
	for i := 0; i < a.m; i++ {
		lmax = math.Max(lmax, -a.d0[i*a.m+i])
	}
	s := math.Ceil(interval * lmax / 0.25)
	// Per grid point, NewModel does 2 m×n×n and 3 n×n×B products and stores 2 m×n + 2 n×B numbers.
	m, b := float64(a.m), float64(max(maxBatch, 1))
	n := m * b
	per := float64(max(intervals, 1))
	budget := math.Min(maxGridFlops/(2*m*n*n+3*n*n*b), maxGridFloats/(2*m*n+2*n*b)) / per
	if s > budget {
		s = math.Floor(budget)
	}
	if s < float64(minSteps) {
		s = float64(minSteps)
	}
	if !(s >= 1) {
		s = 1
	}
	return int(s)
}
