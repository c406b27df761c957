package keepalive

import (
	"math"
	"time"
)

// histogram counts idle times in bins of width over [0, rng); longer idle times are
// out-of-bounds (OOB). When window > 0, samples older than window (by observation time) are
// evicted, which makes the histogram cover "the last window" of idle times (LSTH's long and
// short histograms); window 0 keeps every sample (HHP).
type histogram struct {
	width  time.Duration
	window time.Duration
	bins   []int
	oob    int
	total  int
	fifo   []sample // only when window > 0
	head   int      // first live entry of fifo
	// last is the most recent idle time added (in or out of bounds): the forecast of the
	// ARIMA(0,1,0) stand-in for out-of-bounds patterns.
	last time.Duration
}

type sample struct {
	at  time.Time
	bin int // -1 for OOB
}

func newHistogram(width, rng, window time.Duration) *histogram {
	n := int((rng + width - 1) / width)
	return &histogram{width: width, window: window, bins: make([]int, n)}
}

func (h *histogram) add(at time.Time, idle time.Duration) {
	b := int(idle / h.width)
	if idle < 0 {
		b = 0
	}
	if b >= len(h.bins) {
		b = -1
		h.oob++
	} else {
		h.bins[b]++
	}
	h.total++
	h.last = max(idle, 0)
	if h.window > 0 {
		h.fifo = append(h.fifo, sample{at: at, bin: b})
	}
}

// evict drops samples observed at or before now − window.
func (h *histogram) evict(now time.Time) {
	if h.window <= 0 {
		return
	}
	cut := now.Add(-h.window)
	for h.head < len(h.fifo) && !h.fifo[h.head].at.After(cut) {
		s := h.fifo[h.head]
		if s.bin < 0 {
			h.oob--
		} else {
			h.bins[s.bin]--
		}
		h.total--
		h.head++
	}
	if h.head > 1024 && h.head*2 > len(h.fifo) {
		h.fifo = append(h.fifo[:0], h.fifo[h.head:]...)
		h.head = 0
	}
}

// beyondInto writes into dst the part of h from bin from on (the idle times at least
// from × width long, out-of-bounds ones included) and returns dst; last becomes dst's forecast
// (the most recent of those idle times). dst's bins are reused when long enough.
func (h *histogram) beyondInto(dst *histogram, from int, last time.Duration) *histogram {
	if cap(dst.bins) < len(h.bins) {
		dst.bins = make([]int, len(h.bins))
	}
	dst.bins = dst.bins[:len(h.bins)]
	dst.width, dst.window, dst.fifo, dst.head = h.width, 0, nil, 0
	dst.oob, dst.total, dst.last = h.oob, h.oob, last
	for b := range dst.bins {
		if b < from {
			dst.bins[b] = 0
			continue
		}
		dst.bins[b] = h.bins[b]
		dst.total += h.bins[b]
	}
	return dst
}

// inBounds is the number of samples inside the histogram's range.
func (h *histogram) inBounds() int { return h.total - h.oob }

// percentile returns the bin holding the p-th percentile (0 < p ≤ 100) of the in-bounds
// samples; -1 when there are none.
func (h *histogram) percentile(p float64) int {
	n := h.inBounds()
	if n == 0 {
		return -1
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = max(1, min(rank, n))
	seen := 0
	for b, c := range h.bins {
		seen += c
		if seen >= rank {
			return b
		}
	}
	return len(h.bins) - 1
}

// cv returns the coefficient of variation of the bin counts (Shahrad et al.'s measure of how
// representative a histogram is: one sharp peak gives a high CV, a flat spread a low one).
func (h *histogram) cv() float64 {
	n := float64(len(h.bins))
	mean := float64(h.inBounds()) / n
	if mean == 0 {
		return 0
	}
	ss := 0.0
	for _, c := range h.bins {
		d := float64(c) - mean
		ss += d * d
	}
	return math.Sqrt(ss/n) / mean
}
