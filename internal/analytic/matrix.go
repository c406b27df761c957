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

// matMul sets dst (r×c) = a (r×k) · b (k×c); dst must not alias a or b. With many rows it
// first finds b's non-zero column span per row (cheap next to the product) and skips the rest.
func matMul(dst, a, b []float64, r, k, c int) {
	if r >= 8 {
		matMulSpan(dst, a, b, r, k, c, spans(b, k, c))
		return
	}
	matMulSpan(dst, a, b, r, k, c, span{})
}

// span is the non-zero column range [lo[l], hi[l]) of each row l of a k×c matrix; the zero span
// means every column. The generators of this package and their exponentials are block
// upper-triangular (the buffer's level only goes up), so most rows start late and the
// products skip about half their terms (issue #17, the scoreboard's hot path by pprof).
type span struct{ lo, hi []int32 }

// spans returns b's non-zero column span per row.
func spans(b []float64, k, c int) span {
	s := span{lo: make([]int32, k), hi: make([]int32, k)}
	s.find(b, k, c)
	return s
}

// find sets s (k rows long) to b's non-zero column spans.
func (s span) find(b []float64, k, c int) {
	for l := 0; l < k; l++ {
		row := b[l*c : (l+1)*c]
		lo, hi := 0, c
		for lo < c && row[lo] == 0 {
			lo++
		}
		for hi > lo && row[hi-1] == 0 {
			hi--
		}
		s.lo[l], s.hi[l] = int32(lo), int32(hi)
	}
}

// cols returns row l's column range under s (every column for the zero span).
func (s span) cols(l, c int) (int, int) {
	if s.lo == nil {
		return 0, c
	}
	return int(s.lo[l]), int(s.hi[l])
}

// matMulSpan is matMul with b's non-zero spans given. It adds the same terms in the same order
// as the dense product and drops only exact zeros (x + v·0 = x for finite v, and no sum here is
// −0), so the result is bit-identical.
func matMulSpan(dst, a, b []float64, r, k, c int, s span) {
	for i := 0; i < r; i++ {
		row := dst[i*c : (i+1)*c]
		clear(row)
		for l := 0; l < k; l++ {
			v := a[i*k+l]
			if v == 0 {
				continue
			}
			lo, hi := s.cols(l, c)
			bl := b[l*c+lo : l*c+hi]
			out := row[lo:hi]
			for j, x := range bl {
				out[j] += v * x
			}
		}
	}
}

// vecMat sets dst (length c) = x (length k) · b (k×c); dst must not alias x.
func vecMat(dst, x, b []float64, k, c int) { vecMatSpan(dst, x, b, k, c, span{}) }

// vecMatSpan is vecMat with b's non-zero spans given (bit-identical, as matMulSpan).
func vecMatSpan(dst, x, b []float64, k, c int, s span) {
	clear(dst[:c])
	for l := 0; l < k; l++ {
		v := x[l]
		if v == 0 {
			continue
		}
		lo, hi := s.cols(l, c)
		bl := b[l*c+lo : l*c+hi]
		out := dst[lo:hi]
		for j, y := range bl {
			out[j] += v * y
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
