package slo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 255, 256, 257, 1000, 1 << 20, 123456789, 1<<histMaxExp - 1} {
		i := bucketOf(v)
		lo, w := bucketBounds(i)
		if v < lo || v >= lo+w {
			t.Errorf("value %d: bucket %d = [%d, %d) does not contain it", v, i, lo, lo+w)
		}
		if v >= 2*subCount && float64(w)/float64(lo) > 1.0/subCount+1e-12 {
			t.Errorf("value %d: bucket width %d is more than 1/%d of %d", v, w, subCount, lo)
		}
	}
	if got := bucketOf(math.MaxInt64); got != numBuckets-1 {
		t.Errorf("bucketOf(MaxInt64) = %d, want last bucket %d", got, numBuckets-1)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		gen  func() time.Duration
	}{
		{"exponential 50ms", func() time.Duration { return time.Duration(rng.ExpFloat64() * 50e6) }},
		{"uniform 1us-1s", func() time.Duration { return time.Duration(1e3 + rng.Float64()*1e9) }},
		{"lognormal", func() time.Duration { return time.Duration(math.Exp(rng.NormFloat64()*2+15)) + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			xs := make([]int64, 20000)
			for i := range xs {
				d := tt.gen()
				xs[i] = int64(d)
				h.Record(d)
			}
			slices.Sort(xs)
			for _, q := range []float64{0.01, 0.5, 0.9, 0.95, 0.99, 0.999} {
				want := float64(xs[rankIndex(q, len(xs))])
				got := float64(h.Quantile(q))
				if rel := math.Abs(got-want) / want; rel > 0.01 {
					t.Errorf("Quantile(%v) = %v, exact %v: relative error %.4f > 1%%", q, got, want, rel)
				}
			}
			if got, want := h.Quantile(1), time.Duration(xs[len(xs)-1]); got != want {
				t.Errorf("Quantile(1) (-want +got): -%v +%v", want, got)
			}
			if got, want := h.Count(), uint64(len(xs)); got != want {
				t.Errorf("Count (-want +got): -%d +%d", want, got)
			}
		})
	}
}

func TestHistogramMergeAndCCDF(t *testing.T) {
	var a, b, all Histogram
	for i := 1; i <= 100; i++ {
		d := time.Duration(i) * time.Millisecond
		all.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	if a != all {
		t.Fatalf("merged histogram differs from the one that recorded everything")
	}
	pts := a.CCDF()
	if len(pts) != 100 {
		t.Fatalf("CCDF points (-want +got): -100 +%d", len(pts))
	}
	if got := pts[len(pts)-1]; got.Exceeded != 0 || got.Latency != 100*time.Millisecond {
		t.Errorf("last CCDF point (-want +got): -{100ms 0} +%v", got)
	}
	if got := pts[49].Exceeded; got != 0.5 {
		t.Errorf("CCDF at the 50th value (-want +got): -0.5 +%v", got)
	}
	if got := a.CountAtMost(50 * time.Millisecond); got != 50 {
		t.Errorf("CountAtMost(50ms) (-want +got): -50 +%d", got)
	}
	var empty Histogram
	if empty.Quantile(0.5) != 0 || empty.CCDF() != nil || empty.Mean() != 0 {
		t.Errorf("empty histogram must report zeros")
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	d := 37 * time.Millisecond
	for b.Loop() {
		h.Record(d)
		d += 1013
	}
}

func BenchmarkHistogramQuantile(b *testing.B) {
	var h Histogram
	for i := range 100000 {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for b.Loop() {
		h.Quantile(0.99)
	}
}
