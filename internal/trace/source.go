package trace

import (
	"iter"
	"math"
	"math/rand/v2"
	"time"
)

// Source yields arrival times as offsets from the start of a run, non-decreasing; ok is false
// once it is exhausted. The simulator pulls from it; Next never allocates. A Source is owned by
// one goroutine.
type Source interface {
	Next() (at time.Duration, ok bool)
}

// SourceFunc adapts a function to a Source: the strategy form of an arrival process.
type SourceFunc func() (time.Duration, bool)

// Next calls f.
func (f SourceFunc) Next() (time.Duration, bool) { return f() }

var _ Source = SourceFunc(nil)

// Seq returns src as a range-over-func sequence of arrival offsets.
func Seq(src Source) iter.Seq[time.Duration] {
	return func(yield func(time.Duration) bool) {
		for {
			at, ok := src.Next()
			if !ok || !yield(at) {
				return
			}
		}
	}
}

// Until stops src at its first arrival at or after end.
func Until(src Source, end time.Duration) Source {
	done := false
	return SourceFunc(func() (time.Duration, bool) {
		if done {
			return 0, false
		}
		at, ok := src.Next()
		if !ok || at >= end {
			done = true
			return 0, false
		}
		return at, true
	})
}

// Take stops src after n arrivals.
func Take(src Source, n int) Source {
	return SourceFunc(func() (time.Duration, bool) {
		if n <= 0 {
			return 0, false
		}
		n--
		return src.Next()
	})
}

// Pacer is a vegeta-style pacing strategy for a live load generator: given the time elapsed
// since the attack started and the hits sent so far, it says how long to wait before the next
// hit (0: send now) or to stop.
type Pacer interface {
	Pace(elapsed time.Duration, hits uint64) (wait time.Duration, stop bool)
}

// PacerFunc adapts a function to a Pacer.
type PacerFunc func(elapsed time.Duration, hits uint64) (time.Duration, bool)

// Pace calls f.
func (f PacerFunc) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	return f(elapsed, hits)
}

// NewPacer adapts an arrival Source to a Pacer: hit number h (0-based) is due at the Source's
// (h+1)-th arrival; the pacer stops when the Source is exhausted.
func NewPacer(src Source) Pacer {
	var (
		consumed uint64 // arrivals pulled from src
		due      time.Duration
		done     bool
	)
	return PacerFunc(func(elapsed time.Duration, hits uint64) (time.Duration, bool) {
		for !done && consumed <= hits {
			at, ok := src.Next()
			if !ok {
				done = true
				break
			}
			due, consumed = at, consumed+1
		}
		if done && consumed <= hits {
			return 0, true
		}
		if w := due - elapsed; w > 0 {
			return w, false
		}
		return 0, false
	})
}

// newRand returns the PCG generator every source of this package uses for seed.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7ace5eed)) }

// expGap returns an exponential gap of rate per second as a Duration (at least 0).
func expGap(rng *rand.Rand, rate float64) time.Duration {
	g := rng.ExpFloat64() / rate * 1e9
	if g >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return time.Duration(g)
}

// Poisson returns an endless Poisson process of rate requests per second, deterministic for
// seed; rate ≤ 0 (or NaN) yields nothing.
func Poisson(rate float64, seed uint64) Source {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return SourceFunc(func() (time.Duration, bool) { return 0, false })
	}
	rng := newRand(seed)
	var t time.Duration
	return SourceFunc(func() (time.Duration, bool) {
		t += expGap(rng, rate)
		return t, true
	})
}
