package analytic

import "math"

// The matrices of this package are small (at most a few hundred rows), dense, row-major []float64
// slices: the hot loops of the latency model are vector–matrix products, which plain slices do
// without allocation, and the one factorisation we need (least squares) uses gonum.

// expm returns e^{M·t} for an n×n Metzler matrix M (non-negative off-diagonal entries: CTMC
// generators, their sub-generators and the Van Loan block matrices built from them) by
// uniformisation with scaling and squaring: with q ≥ max|M_ii|, P = I + M/q is non-negative and
// e^{Mt} = Σ_k e^{-qt} (qt)^k/k! · P^k. Every term is non-negative, so — unlike a Padé approximant —
// nothing cancels and the result keeps probabilities in [0, 1] to machine precision. When qt is
// large the interval is halved s times (qt/2^s ≤ 8, so about 30 terms suffice) and the result
// squared s times, which is also free of cancellation. Reibman & Trivedi [51] in the paper.
func expm(m []float64, n int, t float64) []float64 {
	q := 0.0
	for i := 0; i < n; i++ {
		q = math.Max(q, -m[i*n+i])
	}
	if q == 0 {
		q = 1 // any q > 0 keeps P non-negative when the diagonal is zero
	}
	s := 0
	for q*t/math.Ldexp(1, s) > 8 {
		s++
	}
	tau := t / math.Ldexp(1, s)
	lam := q * tau
	p := make([]float64, n*n)
	rho := 0.0 // ||P||_inf bounds the growth of the terms
	for i := 0; i < n; i++ {
		row := 0.0
		for j := 0; j < n; j++ {
			v := m[i*n+j] / q
			if i == j {
				v++
			}
			if v < 0 {
				v = 0 // rounding at the diagonal of the fastest state
			}
			p[i*n+j] = v
			row += v
		}
		rho = math.Max(rho, row)
	}
	res := make([]float64, n*n)
	term := identity(n) // P^k
	w := math.Exp(-lam) // Poisson weight of k
	next := make([]float64, n*n)
	for k := 0; ; k++ {
		for i := range res {
			res[i] += w * term[i]
		}
		// Stop once the remaining Poisson tail, amplified by at most rho^k, is negligible.
		if float64(k) > lam*rho && w*math.Pow(rho, float64(k)) < 1e-17 {
			break
		}
		if k > 1000 {
			break
		}
		matMul(next, term, p, n, n, n)
		term, next = next, term
		w *= lam / float64(k+1)
	}
	for ; s > 0; s-- {
		matMul(next, res, res, n, n, n)
		res, next = next, res
	}
	return res
}

// identity returns the n×n identity matrix.
func identity(n int) []float64 {
	id := make([]float64, n*n)
	for i := 0; i < n; i++ {
		id[i*n+i] = 1
	}
	return id
}

// matMul sets dst (r×c) = a (r×k) · b (k×c); dst must not alias a or b.
func matMul(dst, a, b []float64, r, k, c int) {
	for i := 0; i < r; i++ {
		row := dst[i*c : (i+1)*c]
		for j := range row {
			row[j] = 0
		}
		for l := 0; l < k; l++ {
			v := a[i*k+l]
			if v == 0 {
				continue
			}
			bl := b[l*c : (l+1)*c]
			for j, x := range bl {
				row[j] += v * x
			}
		}
	}
}

// vecMat sets dst (length c) = x (length k) · b (k×c); dst must not alias x.
func vecMat(dst, x, b []float64, k, c int) {
	for j := range dst[:c] {
		dst[j] = 0
	}
	for l := 0; l < k; l++ {
		v := x[l]
		if v == 0 {
			continue
		}
		bl := b[l*c : (l+1)*c]
		for j, y := range bl {
			dst[j] += v * y
		}
	}
}

// block returns the 2n×2n matrix [[a, b], [0, d]] built from n×n blocks (d may be nil for zero).
func block(a, b, d []float64, n int) []float64 {
	out := make([]float64, 4*n*n)
	for i := 0; i < n; i++ {
		copy(out[i*2*n:i*2*n+n], a[i*n:(i+1)*n])
		copy(out[i*2*n+n:(i+1)*2*n], b[i*n:(i+1)*n])
		if d != nil {
			copy(out[(n+i)*2*n+n:(n+i+1)*2*n], d[i*n:(i+1)*n])
		}
	}
	return out
}

// upperRight extracts the upper-right n×n block of a 2n×2n matrix.
func upperRight(m []float64, n int) []float64 {
	out := make([]float64, n*n)
	for i := 0; i < n; i++ {
		copy(out[i*n:(i+1)*n], m[i*2*n+n:(i+1)*2*n])
	}
	return out
}
