package infless

import (
	"math"
	"time"
)

// Bounds are an instance's admissible request rates in requests per second (INFless Eq. 1).
type Bounds struct {
	// Low is r_low: below it a batch of b cannot fill before the SLO forces it out.
	Low float64
	// Up is r_up: above it batches are submitted faster than they execute.
	Up float64
}

// RateBounds returns Eq. 1's bounds for an instance with batch size b, batch execution time exec
// and latency SLO slo:
//
//	r_up = ⌊1/t_exec⌋ × b,   r_low = ⌈1/(t_slo − t_exec)⌉ × b
//
// For b = 1 there is no batch to fill, so r_low is 0 (the original estimator uses 1 request/s,
// which only matters for the α-band's lower edge; 0 keeps a lone b = 1 instance always admissible).
// ok is false when the instance cannot meet the SLO: b > 1 needs t_exec ≤ t_slo/2 (so that
// r_low ≤ r_up), b = 1 needs t_exec ≤ t_slo. When t_exec exceeds 1 s, ⌊1/t_exec⌋ would be 0; the
// exact rate b/t_exec is used instead so that slow but feasible instances still count.
func RateBounds(b int, exec, slo time.Duration) (Bounds, bool) {
	if b < 1 || exec <= 0 || slo <= 0 {
		return Bounds{}, false
	}
	te, ts := exec.Seconds(), slo.Seconds()
	if b == 1 {
		if te > ts {
			return Bounds{}, false
		}
		return Bounds{Low: 0, Up: perSecond(te)}, true
	}
	if te > ts/2 {
		return Bounds{}, false
	}
	up := perSecond(te) * float64(b)
	low := math.Ceil(1/(ts-te)) * float64(b)
	if low > up {
		return Bounds{}, false
	}
	return Bounds{Low: low, Up: up}, true
}

// perSecond is ⌊1/t⌋ batches per second, or 1/t when t > 1 s.
func perSecond(t float64) float64 {
	if f := math.Floor(1 / t); f >= 1 {
		return f
	}
	return 1 / t
}

// SlackLimited reports whether an instance with batch size b and predicted t_exec exec is the case
// Eq. 1 leaves out: b = 1 with t_exec > t_slo/2. Eq. 1 assumes a request waits at most for the
// batch in execution (t_exec ≤ t_slo/2 is enough then); here a request meets the SLO only if it
// waits less than the slack t_slo − t_exec, shorter than one execution, and Eq. 1's r_low for b = 1
// as printed, ⌈1/(t_slo − t_exec)⌉, exceeds r_up = ⌊1/t_exec⌋, which would rule the instance out.
func SlackLimited(b int, exec, slo time.Duration) bool { return b == 1 && 2*exec > slo }

// RateBoundsTarget is RateBounds for an instance that is one of n SlackLimited instances of a
// function whose requests must meet slo with probability target (the SLO's attainment target; 0
// means Eq. 1 unchanged). For such an instance r_up = ⌊1/t_exec⌋ runs it 80–100 % busy in the
// α-band, and most requests that find it busy miss, so r_up is capped at its share of
// PooledRate(n, t_exec, t_slo − t_exec, target): the n instances together take at most the rate
// at which requests wait longer than the slack with probability 1 − target. Every other case is
// RateBounds (Eq. 1; r_low stays 0 for b = 1). ok is false when no rate meets target.
func RateBoundsTarget(b int, exec, slo time.Duration, target float64, n int) (Bounds, bool) {
	return (*PoolMemo)(nil).RateBoundsTarget(b, exec, slo, target, n)
}

// PoolMemo remembers PooledRate's answers (a pure function of its arguments, O(n) per bisection
// step) for callers that ask the same ones again: a function's Options, its instances' bounds and
// its spares within one control step, and the next steps while its pool keeps its size. The zero
// value is ready; a nil *PoolMemo computes every answer.
type PoolMemo struct {
	m map[poolKey]float64
}

type poolKey struct {
	n           int
	exec, slack time.Duration
	target      float64
}

// PooledRate is PooledRate, remembered.
func (m *PoolMemo) PooledRate(n int, exec, slack time.Duration, target float64) float64 {
	if m == nil {
		return PooledRate(n, exec, slack, target)
	}
	k := poolKey{n, exec, slack, target}
	if r, ok := m.m[k]; ok {
		return r
	}
	if m.m == nil {
		m.m = map[poolKey]float64{}
	}
	r := PooledRate(n, exec, slack, target)
	m.m[k] = r
	return r
}

// RateBoundsTarget is RateBoundsTarget with PooledRate remembered in m.
func (m *PoolMemo) RateBoundsTarget(b int, exec, slo time.Duration, target float64, n int) (Bounds, bool) {
	bd, ok := RateBounds(b, exec, slo)
	if !ok || target <= 0 || !SlackLimited(b, exec, slo) {
		return bd, ok
	}
	n = max(n, 1)
	up := m.PooledRate(n, exec, slo-exec, target) / float64(n)
	if !(up > 0) {
		return Bounds{}, false
	}
	bd.Up = math.Min(bd.Up, up)
	return bd, true
}

// PooledRate is the highest Poisson arrival rate (1/s) that n servers with service time exec take
// while a request waits longer than slack with probability at most 1 − target, by the M/M/n
// (Erlang C) model: P(W > x) = C(n, λ·t)·e^{−(n/t − λ)x}. Exponential service is pessimistic for
// a deterministic t_exec (M/D/n waits about half as long), which leaves room for the dispatcher:
// INFless splits a function's load over its instances by weight, not by queue length, so the
// pooling is not perfect (one instance is M/D/1, where this model asks for ~10 % less than
// the exact answer at ssd's figures). 0 when target ≥ 1 or n < 1.
func PooledRate(n int, exec, slack time.Duration, target float64) float64 {
	return pooledRateFrom(n, exec, slack, target, 0)
}

// pooledRateFrom is PooledRate knowing that the answer is at least lo (PooledRate of fewer
// instances, when a scheduler grows a pool one instance at a time).
func pooledRateFrom(n int, exec, slack time.Duration, target, lo float64) float64 {
	d, x := exec.Seconds(), math.Max(slack.Seconds(), 0)
	if n < 1 || d <= 0 || target >= 1 {
		return 0
	}
	e := erlangMiss{n: n, d: d, x: x}
	sat := float64(n) / d
	hi := sat
	if !(lo >= 0 && lo < hi && e.at(lo) <= 1-target) {
		lo = 0
	}
	// Bisection to 0.01 % of saturation, two steps per pass: the midpoint and both of the next
	// step's candidates are evaluated in one interleaved pass (three independent Erlang B
	// recursions), and the candidate the midpoint's answer selects is used — the same points,
	// with the same arithmetic, as one step at a time.
	for hi-lo > 1e-4*hi {
		mid := (lo + hi) / 2
		left, right := (lo+mid)/2, (mid+hi)/2
		mMid, mLeft, mRight := e.at3(mid, left, right)
		next, mNext := left, mLeft
		if mMid <= 1-target {
			lo, next, mNext = mid, right, mRight
		} else {
			hi = mid
		}
		if !(hi-lo > 1e-4*hi) {
			break
		}
		if mNext <= 1-target {
			lo = next
		} else {
			hi = next
		}
	}
	return lo
}

// erlangMiss is the M/M/n probability that a request waits longer than x (seconds) at arrival rate
// l, with service time d: C(n, l·d)·e^{−(n/d − l)x} (Erlang C from Erlang B by recursion).
type erlangMiss struct {
	n    int
	d, x float64
}

func (e erlangMiss) at(l float64) float64 {
	a := l * e.d
	b := 1.0
	for k := 1; k <= e.n; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return e.tail(l, a, b)
}

// at3 is at for three rates in one pass (the recursions are independent, so they overlap).
func (e erlangMiss) at3(l0, l1, l2 float64) (float64, float64, float64) {
	a0, a1, a2 := l0*e.d, l1*e.d, l2*e.d
	b0, b1, b2 := 1.0, 1.0, 1.0
	for k := 1; k <= e.n; k++ {
		fk := float64(k)
		b0 = a0 * b0 / (fk + a0*b0)
		b1 = a1 * b1 / (fk + a1*b1)
		b2 = a2 * b2 / (fk + a2*b2)
	}
	return e.tail(l0, a0, b0), e.tail(l1, a1, b1), e.tail(l2, a2, b2)
}

// tail turns Erlang B (b at offered load a) into the probability of waiting longer than x.
func (e erlangMiss) tail(l, a, b float64) float64 {
	n := float64(e.n)
	c := n * b / (n - a*(1-b))
	return c * math.Exp(-(n/e.d-l)*e.x)
}

// poolRates caches PooledRate by (t_exec, n) for one function's SLO and target while a scheduler
// grows its pool one instance at a time (each answer is the next one's lower bracket).
type poolRates struct {
	slo    time.Duration
	target float64
	m      map[time.Duration][]float64 // by t_exec, by n (0 = not computed)
}

func (p *poolRates) rate(exec time.Duration, n int) float64 {
	if n < 1 {
		return 0
	}
	if p.m == nil {
		p.m = map[time.Duration][]float64{}
	}
	rs := p.m[exec]
	for len(rs) <= n {
		rs = append(rs, 0)
	}
	if rs[n] == 0 {
		var lo float64
		for k := n - 1; k >= 1; k-- {
			if rs[k] > 0 {
				lo = rs[k]
				break
			}
		}
		rs[n] = pooledRateFrom(n, exec, p.slo-exec, p.target, lo)
	}
	p.m[exec] = rs
	return rs[n]
}

// up is the pooled R_max of n SlackLimited instances with t_exec exec: n times each one's r_up,
// min(n·⌊1/t_exec⌋, PooledRate(n)) (RateBoundsTarget).
func (p *poolRates) up(exec time.Duration, n int) float64 {
	if n < 1 {
		return 0
	}
	return math.Min(float64(n)*perSecond(exec.Seconds()), p.rate(exec, n))
}
