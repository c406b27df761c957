package trace

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// drain returns src's offsets.
func drain(src Source) []time.Duration {
	var out []time.Duration
	for at, ok := src.Next(); ok; at, ok = src.Next() {
		out = append(out, at)
	}
	return out
}

// memoTraces are a busy series, one with gaps past 2³² ns (the escape), an empty one, and lists
// kept as they are, thinned and repeated, and one whose gaps are the escape's neighbours.
func memoTraces(t *testing.T) []*Trace {
	t.Helper()
	busy, err := NewSeries("busy", time.Minute, []float64{50, 0, 400, 3, 120})
	if err != nil {
		t.Fatal(err)
	}
	sparse, err := NewSeries("sparse", time.Hour, []float64{0.01, 0, 0.002, 1})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := NewSeries("empty", time.Minute, []float64{0, 0})
	if err != nil {
		t.Fatal(err)
	}
	list, err := NewList("list", []time.Duration{0, 0, 3, 7 * time.Second, 10 * time.Second, 9 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	edge, err := NewList("edge", []time.Duration{gapEscape - 1, 2*gapEscape - 1, 3*gapEscape - 1, 3*gapEscape + 1<<40})
	if err != nil {
		t.Fatal(err)
	}
	out := []*Trace{busy, sparse, empty, list, edge}
	for _, f := range []float64{0.4, 2.5} {
		s, err := list.With(Options{RateScale: f})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestMemoReplaysArrivals: what the memo hands out — recorded, replayed, counted — is what
// Trace.Arrivals gives, offset for offset, for every seed; equal contents share a recording
// and different seeds or contents do not.
func TestMemoReplaysArrivals(t *testing.T) {
	m := NewMemo(64 << 20)
	for _, tr := range memoTraces(t) {
		for _, seed := range []uint64{1, 2} {
			want := drain(tr.Arrivals(seed))
			for pass := range 3 {
				if got := drain(m.Arrivals(tr, seed)); !slices.Equal(got, want) {
					t.Fatalf("%s seed %d pass %d: %d offsets differ from Arrivals' %d", tr.Name, seed, pass, len(got), len(want))
				}
				if n := m.Count(tr, seed); n != int64(len(want)) {
					t.Fatalf("%s seed %d: Count %d, want %d", tr.Name, seed, n, len(want))
				}
			}
		}
	}
	if got, want := len(m.m), 2*len(memoTraces(t)); got != want {
		t.Fatalf("%d recordings, want one per trace and seed (%d)", got, want)
	}
	busy := memoTraces(t)[0]
	twin, err := NewSeries("another name", busy.Step, append([]float64(nil), busy.Rates...))
	if err != nil {
		t.Fatal(err)
	}
	before := len(m.m)
	if got := drain(m.Arrivals(twin, 1)); !slices.Equal(got, drain(busy.Arrivals(1))) || len(m.m) != before {
		t.Fatalf("an equal series was recorded anew (%d → %d recordings) or replayed other offsets", before, len(m.m))
	}
	sparse := memoTraces(t)[1]
	var escaped bool
	for _, g := range m.get(sparse, 1).gaps {
		escaped = escaped || g == gapEscape
	}
	if !escaped {
		t.Fatal("the sparse series has no gap past 2³² ns: the escape is untested")
	}
}

// TestMemoBudget: recordings stay within the byte budget, the least recently used dropped
// first; a trace too large for the budget is generated, never recorded; a nil memo generates.
func TestMemoBudget(t *testing.T) {
	tr, err := NewSeries("s", time.Minute, []float64{100}) // about 6,000 arrivals, 24 kB
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemo(60_000)
	m.Arrivals(tr, 0)
	first := m.m[memoKey{tr.digest(), 0}]
	for seed := range uint64(6) {
		want := drain(tr.Arrivals(seed))
		if got := drain(m.Arrivals(tr, seed)); !slices.Equal(got, want) {
			t.Fatalf("seed %d: replay differs", seed)
		}
		if m.used > m.max {
			t.Fatalf("seed %d: %d bytes held, budget %d", seed, m.used, m.max)
		}
		m.Arrivals(tr, 0) // seed 0 stays the most recent
	}
	if m.m[memoKey{tr.digest(), 0}] != first {
		t.Fatal("the most recently used recording was dropped")
	}
	if len(m.m) != 2 {
		t.Fatalf("%d recordings held, want 2 of 24 kB in 60 kB", len(m.m))
	}
	small := NewMemo(1000)
	if got := drain(small.Arrivals(tr, 1)); !slices.Equal(got, drain(tr.Arrivals(1))) || len(small.m) != 0 {
		t.Fatalf("a trace past the budget: %d recordings, or other offsets", len(small.m))
	}
	var none *Memo
	if got := drain(none.Arrivals(tr, 1)); !slices.Equal(got, drain(tr.Arrivals(1))) || none.Count(tr, 1) != int64(len(got)) {
		t.Fatal("a nil memo does not generate Arrivals' offsets")
	}
}

// TestMemoConcurrent: callers racing for the same and different keys each get Arrivals'
// offsets: they start together on one long trace, so that most ask while the first records it
// (and generate their own), then take turns on the others.
func TestMemoConcurrent(t *testing.T) {
	long, err := NewSeries("long", time.Minute, []float64{500, 800})
	if err != nil {
		t.Fatal(err)
	}
	trs := append([]*Trace{long}, memoTraces(t)...)
	want := make([][]time.Duration, len(trs))
	for i, tr := range trs {
		want[i] = drain(tr.Arrivals(1))
	}
	m := NewMemo(64 << 20)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range 2 * len(trs) {
				k := (g*i + i) % len(trs)
				if got := drain(m.Arrivals(trs[k], 1)); !slices.Equal(got, want[k]) {
					errs <- trs[k].Name
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for name := range errs {
		t.Errorf("%s: a concurrent caller got other offsets", name)
	}
}
