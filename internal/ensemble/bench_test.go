package ensemble

import (
	"testing"
	"time"
)

// BenchmarkWeighted measures one class-weighted vote of nine models (on the request path).
func BenchmarkWeighted(b *testing.B) {
	w := NewClassWeights(Precision, 0)
	pool := ImageNetModels()
	preds := make([]Prediction, len(pool))
	for i, m := range pool {
		preds[i] = Prediction{Model: m.Name, Class: i % 3}
	}
	for range 100 {
		w.Learn(preds, 1)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.Weighted(preds)
	}
}

// BenchmarkSelect measures an uncached O1/O2 selection over Table 1's nine models (2^9 subsets).
func BenchmarkSelect(b *testing.B) {
	pool := ImageNetModels()
	c := Constraint{Latency: 160 * time.Millisecond, Accuracy: 0.9}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Select(pool, c, DefaultConfig()); err != nil {
			b.Fatal(err)
		}
	}
}
