package slo

import (
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/timex"
)

// Window is a sliding-window latency tracker over the last MaxSamples samples that are at most
// MaxAge old (MArk §4.4's "last M requests"; MLProxy §2.2's windowed latencies). Samples must be
// added in non-decreasing time order. Adding and counting never allocate; Quantile reuses a
// scratch buffer allocated once. A Window is not safe for concurrent use.
type Window struct {
	at      []int64 // sample times, nanoseconds since epoch, ring
	val     []int64 // sample latencies, nanoseconds, ring
	head    int     // index of the oldest sample
	n       int     // samples held
	maxAge  int64
	scratch []int64
	epoch   time.Time // time of the first sample; times are kept relative to it
	started bool
}

// NewWindow returns a Window of at most maxSamples samples (≥ 1) no older than maxAge
// (≤ 0 means no age limit).
func NewWindow(maxSamples int, maxAge time.Duration) *Window {
	if maxSamples < 1 {
		maxSamples = 1
	}
	if maxAge <= 0 {
		maxAge = math.MaxInt64
	}
	return &Window{
		at:      make([]int64, maxSamples),
		val:     make([]int64, maxSamples),
		maxAge:  int64(maxAge),
		scratch: make([]int64, maxSamples),
	}
}

// Add records latency v observed at now, evicting the oldest sample when full.
func (w *Window) Add(now time.Time, v time.Duration) {
	if !w.started {
		w.epoch = now
	}
	w.AddAt(int64(timex.Sub(now, w.epoch)), v)
}

// AddAt is Add at the instant at, in nanoseconds on the caller's own clock (any origin, the same
// for every call): a caller that keeps its clock as offsets (the simulator's MLProxy, issue #17)
// skips converting times. A window is used through the At methods or the time ones, not both.
func (w *Window) AddAt(at int64, v time.Duration) {
	w.started = true
	c := len(w.at)
	if w.n == c {
		w.at[w.head], w.val[w.head] = at, int64(v)
		w.head++
		if w.head == c {
			w.head = 0
		}
		return
	}
	i := w.head + w.n
	if i >= c {
		i -= c
	}
	w.at[i], w.val[i] = at, int64(v)
	w.n++
}

// expire drops samples older than now − MaxAge.
func (w *Window) expire(now time.Time) {
	if w.maxAge == math.MaxInt64 || !w.started {
		return
	}
	w.expireAt(int64(timex.Sub(now, w.epoch)))
}

// expireAt is expire at the instant now on the At methods' clock.
func (w *Window) expireAt(now int64) {
	if w.maxAge == math.MaxInt64 {
		return
	}
	cut := now - w.maxAge
	c := len(w.at)
	for w.n > 0 && w.at[w.head] < cut {
		w.head++
		if w.head == c {
			w.head = 0
		}
		w.n--
	}
}

// Len returns how many samples are in the window at now.
func (w *Window) Len(now time.Time) int {
	w.expire(now)
	return w.n
}

// Reset empties the window.
func (w *Window) Reset() { w.head, w.n = 0, 0 }

// CountAbove returns how many samples in the window at now exceed threshold, and the total.
func (w *Window) CountAbove(now time.Time, threshold time.Duration) (above, total int) {
	w.expire(now)
	c := len(w.at)
	for k, i := 0, w.head; k < w.n; k++ {
		if w.val[i] > int64(threshold) {
			above++
		}
		if i++; i == c {
			i = 0
		}
	}
	return above, w.n
}

// Mean returns the mean of the samples in the window at now; ok is false when it is empty.
func (w *Window) Mean(now time.Time) (mean time.Duration, ok bool) {
	w.expire(now)
	if w.n == 0 {
		return 0, false
	}
	var s float64
	c := len(w.at)
	for k, i := 0, w.head; k < w.n; k++ {
		s += float64(w.val[i])
		if i++; i == c {
			i = 0
		}
	}
	return time.Duration(s / float64(w.n)), true
}

// Quantile returns the q-quantile (nearest rank, q in [0, 1]) of the samples in the window at
// now; ok is false when it is empty. It costs O(len) and does not allocate.
func (w *Window) Quantile(now time.Time, q float64) (v time.Duration, ok bool) {
	w.expire(now)
	return w.quantile(q)
}

// QuantileAt is Quantile at the instant now on the At methods' clock (AddAt).
func (w *Window) QuantileAt(now int64, q float64) (v time.Duration, ok bool) {
	w.expireAt(now)
	return w.quantile(q)
}

// quantile is Quantile of the samples held.
func (w *Window) quantile(q float64) (v time.Duration, ok bool) {
	if w.n == 0 {
		return 0, false
	}
	buf := w.scratch[:w.n]
	c := len(w.at)
	for k, i := 0, w.head; k < w.n; k++ {
		buf[k] = w.val[i]
		if i++; i == c {
			i = 0
		}
	}
	return time.Duration(Select(buf, rankIndex(q, w.n))), true
}

// rankIndex returns the 0-based nearest-rank index of quantile q among n ≥ 1 sorted values.
func rankIndex(q float64, n int) int {
	switch {
	case !(q > 0): // also NaN
		return 0
	case q >= 1:
		return n - 1
	}
	r := int(math.Ceil(q*float64(n))) - 1
	if r < 0 {
		r = 0
	}
	if r >= n {
		r = n - 1
	}
	return r
}

// Select returns the k-th smallest (0-based) of xs, reordering xs in place (Hoare's quickselect
// with a median-of-three pivot; deterministic, no allocation). k is clamped to [0, len(xs)-1];
// xs must not be empty.
func Select(xs []int64, k int) int64 {
	lo, hi := 0, len(xs)-1
	if k < lo {
		k = lo
	}
	if k > hi {
		k = hi
	}
	for hi > lo {
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		pivot := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}
