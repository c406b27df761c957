package slo

import (
	"math"
	"math/bits"
	"time"
)

// Histogram layout: values below 2·subCount nanoseconds have a bucket each; above, every power of
// two [2^e, 2^(e+1)) is split into subCount equal buckets (log-linear, as in HdrHistogram), so a
// bucket is at most 1/subCount = 0.78 % of its lower bound wide and the midpoint reported for it
// is within 0.4 % of any value in it. Values from 2^histMaxExp ns (≈ 73 min) up share the last
// bucket; Max stays exact.
const (
	subBits    = 7
	subCount   = 1 << subBits // 128
	histMaxExp = 42
	numBuckets = (histMaxExp-subBits)*subCount + subCount // 4608
)

// Histogram is a log-linear latency histogram with ~1 % relative error: recording costs a few
// nanoseconds and never allocates; quantiles, merging and CCDF points are read from the counts.
// The zero value is an empty histogram ready to use. It is 37 KiB: pass it by pointer. A
// Histogram is not safe for concurrent use.
type Histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      float64 // nanoseconds
	min, max int64
}

// bucketOf returns the bucket index of v ≥ 0 nanoseconds.
func bucketOf(v int64) int {
	if v < 2*subCount {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 1 - subBits
	idx := shift*subCount + int(v>>uint(shift))
	if idx >= numBuckets {
		return numBuckets - 1
	}
	return idx
}

// bucketBounds returns the smallest value of bucket i and its width, in nanoseconds.
func bucketBounds(i int) (lo, width int64) {
	if i < 2*subCount {
		return int64(i), 1
	}
	shift := i/subCount - 1
	mant := i - shift*subCount
	return int64(mant) << uint(shift), int64(1) << uint(shift)
}

// Record adds one latency; negative values count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest recorded value exactly (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min returns the smallest recorded value exactly (0 when empty).
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean returns the exact mean of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Reset empties the histogram.
func (h *Histogram) Reset() { *h = Histogram{} }

// Merge adds all of o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// value returns the representative value of bucket i: its midpoint, clamped to [min, max].
func (h *Histogram) value(i int) int64 {
	lo, w := bucketBounds(i)
	v := lo + (w-1)/2
	if v < h.min {
		v = h.min
	}
	if v > h.max {
		v = h.max
	}
	return v
}

// Quantile returns the nearest-rank q-quantile (q in [0, 1]) within the histogram's resolution;
// q ≥ 1 returns Max exactly and q ≤ 0 Min. It is 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	switch {
	case !(q > 0):
		return time.Duration(h.min)
	case q >= 1:
		return time.Duration(h.max)
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			return time.Duration(h.value(i))
		}
	}
	return time.Duration(h.max)
}

// CountAtMost returns how many recorded values are ≤ d, exact when d lies on a bucket boundary
// and otherwise counting d's whole bucket (at most 0.78 % above d).
func (h *Histogram) CountAtMost(d time.Duration) uint64 {
	v := int64(d)
	if v < 0 || h.n == 0 {
		return 0
	}
	if v >= h.max {
		return h.n
	}
	last := bucketOf(v)
	var cum uint64
	for i := 0; i <= last; i++ {
		cum += h.counts[i]
	}
	return cum
}

// CCDFPoint is one point of a complementary CDF: the fraction of values greater than Latency.
type CCDFPoint struct {
	Latency  time.Duration
	Exceeded float64
}

// CCDF returns one point per non-empty bucket, smallest latency first: the bucket's upper bound
// (its largest value, Max for the last) and the fraction of values above it. For plots; it
// allocates the returned slice.
func (h *Histogram) CCDF() []CCDFPoint {
	if h.n == 0 {
		return nil
	}
	var pts []CCDFPoint
	var cum uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		cum += c
		lo, w := bucketBounds(i)
		up := lo + w - 1
		if up > h.max || i == numBuckets-1 {
			up = h.max
		}
		pts = append(pts, CCDFPoint{Latency: time.Duration(up), Exceeded: float64(h.n-cum) / float64(h.n)})
	}
	return pts
}
