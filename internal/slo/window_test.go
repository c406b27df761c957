package slo

import (
	"slices"
	"testing"
	"time"
)

func TestWindowQuantile(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	tests := []struct {
		name       string
		samples    int
		age        time.Duration
		add        []time.Duration // one per second from t0
		at         time.Duration   // ask at t0 + at
		q          float64
		want       time.Duration
		wantLen    int
		wantAbove  int // samples above 50 ms
		wantAbsent bool
	}{
		{name: "empty", samples: 4, age: time.Minute, at: 0, q: 0.5, wantAbsent: true},
		{name: "median of 3", samples: 4, age: time.Minute, add: []time.Duration{30 * ms, 10 * ms, 20 * ms}, at: 2 * time.Second, q: 0.5, want: 20 * ms, wantLen: 3},
		{name: "count limit evicts oldest", samples: 2, age: time.Minute, add: []time.Duration{90 * ms, 10 * ms, 20 * ms}, at: 2 * time.Second, q: 1, want: 20 * ms, wantLen: 2},
		{name: "age limit", samples: 10, age: 1500 * ms, add: []time.Duration{90 * ms, 80 * ms, 10 * ms, 20 * ms}, at: 3 * time.Second, q: 0.95, want: 20 * ms, wantLen: 2},
		{name: "p95 nearest rank", samples: 100, age: 0, add: seq(20, ms), at: 20 * time.Second, q: 0.95, want: 19 * ms, wantLen: 20},
		{name: "all expired", samples: 10, age: time.Second, add: []time.Duration{60 * ms}, at: 5 * time.Second, q: 0.5, wantAbsent: true},
		{name: "above threshold", samples: 10, age: time.Minute, add: []time.Duration{60 * ms, 40 * ms, 70 * ms}, at: 2 * time.Second, q: 0, want: 40 * ms, wantLen: 3, wantAbove: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWindow(tt.samples, tt.age)
			for i, v := range tt.add {
				w.Add(t0.Add(time.Duration(i)*time.Second), v)
			}
			now := t0.Add(tt.at)
			got, ok := w.Quantile(now, tt.q)
			if ok == tt.wantAbsent {
				t.Fatalf("Quantile ok (-want +got): -%v +%v", !tt.wantAbsent, ok)
			}
			if got != tt.want {
				t.Errorf("Quantile(%v) (-want +got): -%v +%v", tt.q, tt.want, got)
			}
			if got := w.Len(now); got != tt.wantLen {
				t.Errorf("Len (-want +got): -%d +%d", tt.wantLen, got)
			}
			if above, _ := w.CountAbove(now, 50*ms); above != tt.wantAbove && tt.wantAbove != 0 {
				t.Errorf("CountAbove(50ms) (-want +got): -%d +%d", tt.wantAbove, above)
			}
		})
	}
}

func seq(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}

func TestSelectMatchesSort(t *testing.T) {
	inputs := [][]int64{{5}, {2, 1}, {3, 3, 3, 3}, {9, 1, 8, 2, 7, 3, 6, 4, 5}, {1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1}}
	for _, in := range inputs {
		sorted := slices.Sorted(slices.Values(in))
		for k := range in {
			buf := slices.Clone(in)
			if got := Select(buf, k); got != sorted[k] {
				t.Errorf("Select(%v, %d) (-want +got): -%d +%d", in, k, sorted[k], got)
			}
		}
	}
}

func BenchmarkWindowAdd(b *testing.B) {
	w := NewWindow(1000, time.Minute)
	now := time.Unix(0, 0)
	for b.Loop() {
		now = now.Add(time.Millisecond)
		w.Add(now, 20*time.Millisecond)
	}
}

func BenchmarkWindowQuantile1000(b *testing.B) {
	w := NewWindow(1000, time.Hour)
	now := time.Unix(0, 0)
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		w.Add(now, time.Duration(i*7919%1000)*time.Millisecond)
	}
	for b.Loop() {
		w.Quantile(now, 0.95)
	}
}

func TestWindowZeroEpoch(t *testing.T) {
	w := NewWindow(4, time.Second)
	var zero time.Time
	w.Add(zero, 5*time.Millisecond)
	w.Add(zero.Add(500*time.Millisecond), 7*time.Millisecond)
	if got, _ := w.Quantile(zero.Add(1200*time.Millisecond), 1); got != 7*time.Millisecond || w.Len(zero.Add(1200*time.Millisecond)) != 1 {
		t.Errorf("window near the zero time (-want +got): -7ms 1 +%v %d", got, w.Len(zero.Add(1200*time.Millisecond)))
	}
}
