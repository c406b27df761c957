package analytic

import (
	"fmt"
	"math"
)

// Batching is the solved buffer for one arrival process, max batch B and timeout T: the
// distribution of batch sizes (Eqs. 5–8) and the joint distribution of a random request's batch
// size and wait in the buffer, from which the latency CDF follows for any batch service times.
// It is immutable and safe for concurrent use.
type Batching struct {
	b       int
	timeout float64 // seconds
	h       float64 // grid step, seconds
	j       int     // timeout = j·h
	tau     float64 // paper's fill time (Eqs. 10/15), seconds
	start   []float64
	pmf     []float64   // P(K = k+1) per batch
	meanK   float64     // E[K]
	cdf     [][]float64 // cdf[k][u] = P(request in batch of size k+1, continuous wait part ≤ u·h)
	atom    []float64   // request-weighted mass at W = T (first request of a timed-out batch)
	total   []float64   // ρ_{k+1}: request-weighted P(K = k+1) (Eq. 8)
	// lazy, when set, is the model cdf is still to be computed from (Model.law, fill).
	lazy *Model
	// kept, while lazy, holds the wait-distribution columns lazyLatencyCDF computed, k-major as
	// cdf is (kept[k·(j+1)+u]) once have[u]; fill adopts it and computes only the others.
	kept []float64
	have []bool
}

// MaxBatch returns B.
func (bt *Batching) MaxBatch() int { return bt.b }

// Timeout returns T in seconds.
func (bt *Batching) Timeout() float64 { return bt.timeout }

// StartPhase returns π(0) over the phases (Eq. 14, or the exact embedded distribution).
func (bt *Batching) StartPhase() []float64 { return append([]float64(nil), bt.start...) }

// BatchPMF returns P(a batch has k requests) for k = 1..B at index k−1: π(T) of Eqs. 5–7 with
// the last entry collecting the batches that reached B.
func (bt *Batching) BatchPMF() []float64 { return append([]float64(nil), bt.pmf...) }

// RequestPMF returns ρ of Eq. 8: the probability that a random request is served in a batch of
// k requests, k = 1..B at index k−1.
func (bt *Batching) RequestPMF() []float64 { return append([]float64(nil), bt.total...) }

// MeanBatchSize returns E[K], the mean number of requests per batch (per invocation).
func (bt *Batching) MeanBatchSize() float64 { return bt.meanK }

// atomTolerance (seconds) absorbs the rounding of t − S_k so that the atom of the requests that
// wait exactly T is not missed by a few ulps.
const atomTolerance = 1e-12

// waitCDF returns P(K = k+1, W ≤ w) for a random request.
func (bt *Batching) waitCDF(k int, w float64) float64 {
	switch at, i, fr := bt.waitPoint(w); at {
	case waitNone:
		return 0
	case waitAll:
		return bt.total[k]
	default:
		c := bt.cdf[k]
		return c[i] + fr*(c[i+1]-c[i])
	}
}

// Where a wait falls on a law's grid (waitPoint); otherwise between grid points i and i+1, fr
// of the way, where the wait distribution is read by linear interpolation.
const (
	waitNone = iota + 1 // below 0: no request waits less
	waitAll             // at or beyond T: every request of its batch size
)

// waitPoint locates w on the law's grid for waitCDF: within atomTolerance below 0 it is 0 (the
// last request of a full batch waits exactly 0).
func (bt *Batching) waitPoint(w float64) (at, i int, fr float64) {
	switch {
	case w < -atomTolerance:
		return waitNone, 0, 0
	case w < 0:
		w = 0
	case w >= bt.timeout-atomTolerance:
		return waitAll, 0, 0
	}
	x := w / bt.h
	i = int(x)
	if i >= bt.j {
		i = bt.j - 1
	}
	return 0, i, x - float64(i)
}

// WaitCDF returns P(W ≤ w), the probability that a random request waits at most w seconds in
// the buffer.
func (bt *Batching) WaitCDF(w float64) float64 {
	s := 0.0
	for k := 0; k < bt.b; k++ {
		s += bt.waitCDF(k, w)
	}
	return math.Min(1, s)
}

// checkService reports service times that cannot be used with this model.
func (bt *Batching) checkService(service []float64) error {
	if len(service) < bt.b {
		return fmt.Errorf("analytic latency: %d service times for max batch %d", len(service), bt.b)
	}
	for k, s := range service[:bt.b] {
		if !(s >= 0) || math.IsInf(s, 0) {
			return fmt.Errorf("analytic latency: service time of batch %d is %g s", k+1, s)
		}
	}
	return nil
}

// LatencyCDF returns F_R(t) = P(R ≤ t) for a request latency R = W + S_K (wait in the buffer
// plus the deterministic service time of its batch, §III-A; serverless functions do not queue),
// where service[k−1] is S_k in seconds. This is the exact counterpart of Eq. 9; see
// PaperLatencyCDF for the paper's approximation.
func (bt *Batching) LatencyCDF(service []float64, t float64) float64 {
	s := 0.0
	for k := 0; k < bt.b; k++ {
		s += bt.waitCDF(k, t-service[k])
	}
	return math.Min(1, s)
}

// lazyLatencyCDF is LatencyCDF of a law whose wait distribution is not computed (Model.law):
// at one threshold it reads two grid points per batch size, so only those columns are computed
// (Model.waitAt, kept for fill) — bit for bit the values fill would give, and the same sum. The
// optimiser checks every candidate cheaper than the plan against the SLO, and under
// deterministic service (ServiceCV 0: `sloserve`'s own re-plans) no bound rules any out first:
// on Azure fn6's evaluation part in the default setting 53,429 of the 54,064 it checked missed,
// each after its whole wait distribution (191 grid points on average) was computed, against at
// most 2·B columns here (issue #17).
func (bt *Batching) lazyLatencyCDF(service []float64, t float64) float64 {
	md, j := bt.lazy, bt.j
	md.tagging()
	w := md.newWaitScratch()
	s := 0.0
	for k := 0; k < bt.b; k++ {
		switch at, i, fr := bt.waitPoint(t - service[k]); at {
		case waitNone: // adds 0, as waitCDF's would
		case waitAll:
			s += bt.total[k]
		default:
			bt.keepColumn(i, w)
			bt.keepColumn(i+1, w)
			c := bt.kept[k*(j+1) : (k+1)*(j+1)]
			s += c[i] + fr*(c[i+1]-c[i])
		}
	}
	return math.Min(1, s)
}

// keepColumn computes column u of a lazy law's wait distribution into kept, once.
func (bt *Batching) keepColumn(u int, w waitScratch) {
	j := bt.j
	if bt.kept == nil {
		bt.kept, bt.have = make([]float64, bt.b*(j+1)), make([]bool, j+1)
	}
	if bt.have[u] {
		return
	}
	for k, y := range bt.lazy.waitAt(bt, u, w) {
		bt.kept[k*(j+1)+u] = y
	}
	bt.have[u] = true
}

// Attainment returns P(W + S_K·X ≤ t): the fraction of requests served within t seconds when
// every batch's service time is the profile's S_k times a log-normal factor X of mean 1 and
// coefficient of variation cv (cv = 0 is LatencyCDF). BATCH's model (§III-A) has deterministic
// service, but real batches vary (§VI-B: CV up to 0.1 on Lambda), and a configuration's
// attainment at the SLO is set by how far its latency distribution sits below the threshold,
// which a percentile alone does not tell: two configurations with their p95 both under the SLO
// can miss it 0.4 % and 1.4 % of the time under a 5 % service noise (docs/scoreboard.md,
// BATCH's Twitter day). The wait's atoms at 0 (the request that fills a batch) and T (the first
// request of a batch that times out) are exact; between grid points its mass is spread
// uniformly, as LatencyCDF's linear interpolation has it, and integrated exactly against the
// log-normal (the partial expectation Ψ below), so a small cv tends to LatencyCDF.
func (bt *Batching) Attainment(service []float64, t, cv float64) float64 {
	if !(cv > 0) {
		return bt.LatencyCDF(service, t)
	}
	return bt.attainment(newNoiseTable(service, t, cv, bt.h))
}

// attainment is Attainment (cv > 0) with the log-normal integrals taken from tab, which must
// have been made for this model's service times, threshold, noise and grid step.
func (bt *Batching) attainment(tab *noiseTable) float64 {
	total := 0.0
	for k := 0; k < bt.b; k++ {
		c := bt.cdf[k]
		p := c[0] * tab.g(k, tab.t)
		if bt.j > 0 && c[bt.j] > c[0] {
			psi := tab.row(k, bt.j+1)
			for u := 0; u < bt.j; u++ {
				if m := c[u+1] - c[u]; m > 0 {
					// The mass m spread over waits [u·h, (u+1)·h]: m/h · ∫ G(t − w) dw.
					p += m * (psi[u] - psi[u+1]) / bt.h
				}
			}
		}
		if atom := bt.total[k] - c[bt.j]; atom > 0 {
			p += atom * tab.g(k, tab.t-bt.timeout)
		}
		total += p
	}
	return math.Min(1, total)
}

// attainmentBound is an upper bound of Attainment(service, t, cv) from the batch-size law
// alone (no wait distribution; tab is Attainment's table, nil for cv = 0): every request waits
// at least 0 and the first request of a batch that times out exactly T, so of the requests in
// batches of k (ρ_k) at most ρ_k − atom_k are within t with probability G_k(t) and the atom_k
// with G_k(t − T), G_k the service time's CDF (a step for cv = 0). In BATCH's re-plans on the
// week-long Azure traces 93 % of the candidates the optimiser checks miss the SLO and this
// bound rules out three quarters of those, each without the O(T/h·B²·m) wait distribution.
func (bt *Batching) attainmentBound(service []float64, t float64, tab *noiseTable) float64 {
	ub := 0.0
	for k := 0; k < bt.b; k++ {
		below := bt.total[k] - bt.atom[k]
		if tab != nil {
			ub += below*tab.g(k, t) + bt.atom[k]*tab.g(k, t-bt.timeout)
			continue
		}
		switch w := t - service[k]; {
		case w < -atomTolerance:
		case w < bt.timeout-atomTolerance:
			ub += below
		default:
			ub += bt.total[k]
		}
	}
	return ub
}

// coarseBound is an upper bound of Attainment under tab's noise from the law's wait
// distribution at about points grid points U_0 = 0 < U_1 < … < U_A = j only (Model.waitAt, the
// values fill would compute): the wait mass between U_a and U_{a+1} is within the threshold
// with probability at most G(t − U_a·h), G being non-decreasing, which bounds Attainment's
// integral over that stretch. The law must be unfilled (its model's).
func (bt *Batching) coarseBound(tab *noiseTable, points int) float64 {
	md, b, j := bt.lazy, bt.b, bt.j
	md.tagging()
	w := md.newWaitScratch()
	us := make([]int, 0, points+1)
	for a := 0; a <= points; a++ {
		if u := a * j / points; len(us) == 0 || u > us[len(us)-1] {
			us = append(us, u)
		}
	}
	cols := make([]float64, len(us)*b)
	for a, u := range us {
		copy(cols[a*b:(a+1)*b], md.waitAt(bt, u, w))
	}
	ub := 0.0
	for k := 0; k < b; k++ {
		p := cols[k] * tab.g(k, tab.t)
		for a := 0; a+1 < len(us); a++ {
			if d := cols[(a+1)*b+k] - cols[a*b+k]; d > 0 {
				p += d * tab.g(k, tab.t-float64(us[a])*bt.h)
			}
		}
		if atom := bt.total[k] - cols[(len(us)-1)*b+k]; atom > 0 {
			p += atom * tab.g(k, tab.t-bt.timeout)
		}
		ub += p
	}
	return ub
}

// noiseTable holds, for service times S_k, a threshold t, a log-normal service factor of
// coefficient of variation cv and a grid step h, the integrals Ψ_k(t − u·h) of Attainment: they
// depend on neither the arrivals, the batch limit nor the timeout, so the optimiser computes
// them once per memory size and grid step for all the timeouts and batch limits it evaluates
// (each costs a logarithm and two erfc; they were most of Attainment's time, issue #17). Rows
// grow on demand; the values are those Attainment computed inline, so results are unchanged.
type noiseTable struct {
	svc         []float64
	t, h        float64
	sig, lo, hi float64
	rows        [][]float64
}

func newNoiseTable(service []float64, t, cv, h float64) *noiseTable {
	sig := math.Sqrt(math.Log1p(cv * cv))
	// Beyond zmax standard deviations of ln X the factor's tail (< 1e-12) is ignored.
	const zmax = 7.0
	return &noiseTable{svc: service, t: t, h: h, sig: sig, lo: math.Exp(-sig*sig/2 - zmax*sig),
		hi: math.Exp(-sig*sig/2 + zmax*sig), rows: make([][]float64, len(service))}
}

// z returns the standardised log of y/S_k.
func (tab *noiseTable) z(k int, y float64) float64 {
	return (math.Log(y/tab.svc[k]) + tab.sig*tab.sig/2) / tab.sig
}

func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// g returns G_k(y) = P(S_k·X ≤ y).
func (tab *noiseTable) g(k int, y float64) float64 {
	s := tab.svc[k]
	switch {
	case y <= tab.lo*s:
		return 0
	case y >= tab.hi*s:
		return 1
	}
	return phi(tab.z(k, y))
}

// ps returns Ψ_k(y) = ∫_{-∞}^{y} G_k = y·G_k(y) − E[S_k·X; S_k·X ≤ y].
func (tab *noiseTable) ps(k int, y float64) float64 {
	s := tab.svc[k]
	switch {
	case y <= tab.lo*s:
		return 0
	case y >= tab.hi*s:
		return y - s
	}
	zy := tab.z(k, y)
	return y*phi(zy) - s*phi(zy-tab.sig)
}

// row returns Ψ_k(t − u·h) for u = 0..n−1.
func (tab *noiseTable) row(k, n int) []float64 {
	r := tab.rows[k]
	for u := len(r); u < n; u++ {
		r = append(r, tab.ps(k, tab.t-float64(u)*tab.h))
	}
	tab.rows[k] = r
	return r[:n]
}

// Quantile returns the p-quantile (0 < p < 1) of the latency in seconds: the smallest t with
// LatencyCDF(service, t) ≥ p, to 1 µs, or an error for bad service times or p.
func (bt *Batching) Quantile(service []float64, p float64) (float64, error) {
	if err := bt.checkService(service); err != nil {
		return 0, err
	}
	if !(p > 0 && p < 1) {
		return 0, fmt.Errorf("analytic latency: percentile %g must be in (0, 1)", p)
	}
	lo, hi := bt.support(service)
	return quantile(func(t float64) float64 { return bt.LatencyCDF(service, t) }, lo, hi, p), nil
}

// QuantileCV returns the p-quantile (0 < p < 1) of the latency in seconds when every batch's
// service time carries a log-normal factor of mean 1 and coefficient of variation cv: the
// smallest t with Attainment(service, t, cv) ≥ p, to 1 µs (Quantile for cv = 0). Service times
// must be valid (see Quantile); it returns NaN otherwise.
func (bt *Batching) QuantileCV(service []float64, p, cv float64) float64 {
	if !(cv > 0) {
		q, err := bt.Quantile(service, p)
		if err != nil {
			return math.NaN()
		}
		return q
	}
	if bt.checkService(service) != nil || !(p > 0 && p < 1) {
		return math.NaN()
	}
	lo, hi := bt.support(service)
	// The noise factor stays within e^{±(σ²/2 + 7σ)} (Attainment's cut-off).
	sig := math.Sqrt(math.Log1p(cv * cv))
	lo *= math.Exp(-sig*sig/2 - 7*sig)
	hi = bt.timeout + (hi-bt.timeout)*math.Exp(-sig*sig/2+7*sig)
	return quantile(func(t float64) float64 { return bt.Attainment(service, t, cv) }, lo, hi, p)
}

// support returns an interval that contains the whole latency distribution.
func (bt *Batching) support(service []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, s := range service[:bt.b] {
		lo = math.Min(lo, s)
		hi = math.Max(hi, s)
	}
	return lo, hi + bt.timeout
}

// quantile bisects a monotone CDF on [lo, hi] to 1e-6 s.
func quantile(cdf func(float64) float64, lo, hi, p float64) float64 {
	if cdf(lo) >= p {
		return lo
	}
	for i := 0; i < 200 && hi-lo > 1e-6; i++ {
		mid := (lo + hi) / 2
		if cdf(mid) >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// MeanLatency returns E[R] in seconds for the given service times.
func (bt *Batching) MeanLatency(service []float64) float64 {
	// E[W + S_K] = Σ_k ρ_k S_k + ∫ P(W > w) dw.
	m := 0.0
	for k := 0; k < bt.b; k++ {
		m += bt.total[k] * service[k]
	}
	for u := 0; u < bt.j; u++ {
		a := bt.WaitCDF(float64(u) * bt.h)
		c := bt.WaitCDF(math.Nextafter(float64(u+1)*bt.h, 0))
		m += bt.h * (1 - (a+c)/2)
	}
	return m
}

// PaperLatencyCDF returns Eq. 9 of the paper as implemented in BATCH's solver: within
// [S_k, S_k + T] the latency of a request in a batch of k < B is spread uniformly, for k = B over
// [S_B, S_B + min(τ, T)] with τ = (B−1)/λ̄ (Eqs. 10, 15), and the CDF is flat in between. Service
// times must increase with k. It is exact only when T ≪ S_{k+1} − S_k, λT is large (few lone
// requests: a lone request always waits the full T, not a uniform share of it) and full batches
// fill in about τ; sloserve uses LatencyCDF and keeps this one to measure the difference.
func (bt *Batching) PaperLatencyCDF(service []float64, t float64) float64 {
	b, v, q := bt.b, service[:bt.b], bt.total
	tau := math.Min(bt.tau, bt.timeout)
	if b == 1 || bt.timeout == 0 {
		if t < v[0] {
			return 0
		}
		return 1
	}
	if t < v[0] {
		return 0
	}
	if t > v[b-1]+tau {
		return 1
	}
	idx := b - 1
	for i := 0; i < b-1; i++ {
		if t >= v[i] && t < v[i+1] {
			idx = i
			break
		}
	}
	below := 0.0
	for i := 0; i < idx; i++ {
		below += q[i]
	}
	switch {
	case t <= v[idx]+bt.timeout && idx < b-1:
		return (t-v[idx])/bt.timeout*q[idx] + below
	case t <= v[idx]+bt.timeout && idx == b-1:
		if tau == 0 {
			return below + q[idx]
		}
		return math.Min(1, (t-v[idx])/tau*q[idx]+below)
	default:
		return below + q[idx]
	}
}

// PaperQuantile returns the p-quantile of PaperLatencyCDF.
func (bt *Batching) PaperQuantile(service []float64, p float64) (float64, error) {
	if err := bt.checkService(service); err != nil {
		return 0, err
	}
	if !(p > 0 && p < 1) {
		return 0, fmt.Errorf("analytic latency: percentile %g must be in (0, 1)", p)
	}
	lo, hi := bt.support(service)
	return quantile(func(t float64) float64 { return bt.PaperLatencyCDF(service, t) }, lo, hi, p), nil
}
