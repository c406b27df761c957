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
