package trace

import (
	"math"
	"slices"
	"testing"
	"time"
)

// stats returns the mean rate (per second) and the lag-1 autocorrelation of the gaps of the
// first n arrivals of src.
func stats(t *testing.T, src Source, n int) (rate, rho1 float64) {
	t.Helper()
	gaps := make([]float64, 0, n)
	var prev time.Duration
	for range n {
		at, ok := src.Next()
		if !ok {
			t.Fatalf("source ended after %d arrivals", len(gaps))
		}
		if at < prev {
			t.Fatalf("arrival %v before the previous %v", at, prev)
		}
		gaps = append(gaps, (at - prev).Seconds())
		prev = at
	}
	var mean float64
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	var v, c float64
	for i, g := range gaps {
		v += (g - mean) * (g - mean)
		if i > 0 {
			c += (g - mean) * (gaps[i-1] - mean)
		}
	}
	return float64(n) / prev.Seconds(), c / v
}

func TestGeneratorRates(t *testing.T) {
	mmpp := MMPP2(10, 100, 0.5, 1)
	neg := MAP2{D0: [2][2]float64{{-1, 0}, {0, -10}}, D1: [2][2]float64{{0, 1}, {10, 0}}}
	tests := []struct {
		name     string
		src      Source
		wantRate float64
		wantRho  float64 // analytic lag-1 autocorrelation
	}{
		{"poisson", Poisson(100, 1), 100, 0},
		// λ = (λ1·r21 + λ2·r12)/(r12 + r21) = (10 + 50)/1.5 = 40.
		{"mmpp2", mmpp.Arrivals(2), 40, mmpp.Lag1()},
		// Gaps alternate Exp(1), Exp(10): mean 0.55 s, λ = 1/0.55.
		{"map2 alternating", neg.Arrivals(3), 1 / 0.55, neg.Lag1()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rate, rho := stats(t, tt.src, 200_000)
			t.Logf("rate %.3f (analytic %.3f), lag-1 %.4f (analytic %.4f)", rate, tt.wantRate, rho, tt.wantRho)
			if math.Abs(rate/tt.wantRate-1) > 0.02 {
				t.Errorf("mean rate (-want +got): -%.3f +%.3f", tt.wantRate, rate)
			}
			if math.Abs(rho-tt.wantRho) > 0.03 || tt.wantRho != 0 && math.Signbit(rho) != math.Signbit(tt.wantRho) {
				t.Errorf("lag-1 autocorrelation (-want +got): -%.4f +%.4f", tt.wantRho, rho)
			}
		})
	}
	if got := mmpp.Rate(); math.Abs(got-40) > 1e-12 {
		t.Errorf("MMPP2 analytic rate (-want +got): -40 +%v", got)
	}
	if !(mmpp.Lag1() > 0) || !(neg.Lag1() < 0) {
		t.Errorf("lag-1 signs (-want +got): -(+, −) +(%v, %v)", mmpp.Lag1(), neg.Lag1())
	}
	if err := mmpp.Validate(); err != nil {
		t.Errorf("MMPP2 must be a valid MAP: %v", err)
	}
}

func TestSharedMAPFit(t *testing.T) {
	m, err := OpenMAP2(sharedData(t, "traces/batch-map-fits/twitter"), 1)
	if err != nil {
		t.Fatal(err)
	}
	rate, rho := stats(t, m.Arrivals(7), 200_000)
	t.Logf("twitter hour 1: rate %.3f (analytic %.3f), lag-1 %.4f (analytic %.4f)", rate, m.Rate(), rho, m.Lag1())
	if math.Abs(rate/m.Rate()-1) > 0.02 {
		t.Errorf("mean rate (-want +got): -%.3f +%.3f", m.Rate(), rate)
	}
	if want := m.Lag1(); math.Abs(rho-want) > 0.03 {
		t.Errorf("lag-1 autocorrelation (-want +got): -%.4f +%.4f", want, rho)
	}
}

func TestSeriesArrivals(t *testing.T) {
	tr, err := NewSeries("steps", 10*time.Second, []float64{50, 0, 200, 0.05})
	if err != nil {
		t.Fatal(err)
	}
	counts := Counts(tr.Arrivals(1), 10*time.Second, tr.Duration())
	want := []float64{500, 0, 2000, 0.5}
	for i, c := range counts {
		if math.Abs(float64(c)-want[i]) > 4*math.Sqrt(want[i])+1 {
			t.Errorf("step %d: arrivals (-want +got): -%v ±4σ +%d", i, want[i], c)
		}
	}
	if counts[1] != 0 {
		t.Errorf("a zero-rate step got %d arrivals", counts[1])
	}
	a := slices.Collect(Seq(tr.Arrivals(42)))
	b := slices.Collect(Seq(tr.Arrivals(42)))
	c := slices.Collect(Seq(tr.Arrivals(43)))
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("arrivals must be a function of the seed: same seed equal=%v, other seed equal=%v", slices.Equal(a, b), slices.Equal(a, c))
	}
	if last := a[len(a)-1]; last >= tr.Duration() {
		t.Errorf("arrival %v beyond the trace's end %v", last, tr.Duration())
	}
}

func TestWith(t *testing.T) {
	series, _ := NewSeries("s", time.Second, []float64{10, 20, 30, 40})
	list, _ := NewList("l", []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second})
	tests := []struct {
		name      string
		tr        *Trace
		o         Options
		wantStep  time.Duration
		wantRates []float64
		wantTimes []time.Duration
		wantEnd   time.Duration
		wantExp   float64
		wantErr   bool
	}{
		{name: "identity", tr: series, o: Options{}, wantStep: time.Second, wantRates: []float64{10, 20, 30, 40}, wantExp: 100},
		{name: "rate ×2", tr: series, o: Options{RateScale: 2}, wantStep: time.Second, wantRates: []float64{20, 40, 60, 80}, wantExp: 200},
		{name: "time ×2 keeps counts", tr: series, o: Options{TimeScale: 2}, wantStep: 2 * time.Second, wantRates: []float64{5, 10, 15, 20}, wantExp: 100},
		{name: "window rounds to steps", tr: series, o: Options{From: 1500 * time.Millisecond, To: 2500 * time.Millisecond}, wantStep: time.Second, wantRates: []float64{20, 30}, wantExp: 50},
		{name: "window in scaled time", tr: series, o: Options{TimeScale: 0.5, From: time.Second}, wantStep: 500 * time.Millisecond, wantRates: []float64{60, 80}, wantExp: 70},
		{name: "list window", tr: list, o: Options{From: time.Second, To: 3 * time.Second}, wantTimes: []time.Duration{0, time.Second}, wantEnd: 2 * time.Second, wantExp: 2},
		{name: "list time ×0.5", tr: list, o: Options{TimeScale: 0.5}, wantTimes: []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}, wantEnd: 1500 * time.Millisecond, wantExp: 4},
		{name: "list rate ×0.5", tr: list, o: Options{RateScale: 0.5}, wantTimes: list.Times, wantEnd: 3 * time.Second, wantExp: 2},
		{name: "negative scale", tr: series, o: Options{RateScale: -1}, wantErr: true},
		{name: "empty window", tr: series, o: Options{From: 2 * time.Second, To: time.Second}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.tr.With(tt.o)
			if (err != nil) != tt.wantErr {
				t.Fatalf("With error (-want +got): -%v +%v", tt.wantErr, err)
			}
			if err != nil {
				return
			}
			if got.Step != tt.wantStep || !slices.Equal(got.Rates, tt.wantRates) || !slices.Equal(got.Times, tt.wantTimes) ||
				!got.IsSeries() && got.End != tt.wantEnd || math.Abs(got.Expected()-tt.wantExp) > 1e-9 {
				t.Errorf("With (-want +got):\n-%v %v %v end %v exp %v\n+%v %v %v end %v exp %v",
					tt.wantStep, tt.wantRates, tt.wantTimes, tt.wantEnd, tt.wantExp, got.Step, got.Rates, got.Times, got.End, got.Expected())
			}
		})
	}
}

func TestListRateScale(t *testing.T) {
	times := make([]time.Duration, 10_000)
	for i := range times {
		times[i] = time.Duration(i) * time.Second
	}
	list, _ := NewList("l", times)
	for _, f := range []float64{0.3, 1, 2.5} {
		scaled, err := list.With(Options{RateScale: f})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Collect(Seq(scaled.Arrivals(9)))
		if want := f * float64(len(times)); math.Abs(float64(len(got))-want) > 0.03*want {
			t.Errorf("rate ×%v: arrivals (-want +got): -%v +%d", f, want, len(got))
		}
		if !slices.IsSorted(got) {
			t.Errorf("rate ×%v: arrivals out of order", f)
		}
	}
}

func TestUntilTakePacer(t *testing.T) {
	list, _ := NewList("l", []time.Duration{time.Second, 2 * time.Second, 3 * time.Second})
	if got := slices.Collect(Seq(Until(list.Arrivals(0), 3*time.Second))); !slices.Equal(got, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("Until (-want +got): -[1s 2s] +%v", got)
	}
	if got := slices.Collect(Seq(Take(list.Arrivals(0), 1))); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Errorf("Take (-want +got): -[1s] +%v", got)
	}
	p := NewPacer(list.Arrivals(0))
	steps := []struct {
		elapsed  time.Duration
		hits     uint64
		wantWait time.Duration
		wantStop bool
	}{
		{0, 0, time.Second, false},
		{time.Second, 0, 0, false},
		{1500 * time.Millisecond, 1, 500 * time.Millisecond, false},
		{2500 * time.Millisecond, 2, 500 * time.Millisecond, false},
		{4 * time.Second, 2, 0, false},
		{4 * time.Second, 3, 0, true},
	}
	for _, s := range steps {
		w, stop := p.Pace(s.elapsed, s.hits)
		if w != s.wantWait || stop != s.wantStop {
			t.Errorf("Pace(%v, %d) (-want +got): -%v %v +%v %v", s.elapsed, s.hits, s.wantWait, s.wantStop, w, stop)
		}
	}
	if _, ok := Poisson(0, 1).Next(); ok {
		t.Errorf("Poisson(0) must yield nothing")
	}
}

func TestSharedTwitterArrivals(t *testing.T) {
	tr, err := Open(sharedData(t, "traces/twitter-2017-05-25.rps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	hour, err := tr.With(Options{From: 7 * time.Hour, To: 8 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range Seq(hour.Arrivals(1)) {
		n++
	}
	if want := hour.Expected(); math.Abs(float64(n)-want) > 4*math.Sqrt(want) {
		t.Errorf("arrivals in hour 7 (-want +got): -%.0f ±4σ +%d", want, n)
	}
}

func BenchmarkSeriesNext(b *testing.B) {
	tr, _ := NewSeries("b", time.Second, slices.Repeat([]float64{1000}, 1<<20))
	src := tr.Arrivals(1)
	for b.Loop() {
		if _, ok := src.Next(); !ok {
			b.Fatal("exhausted")
		}
	}
}

func BenchmarkMAP2Next(b *testing.B) {
	src := MMPP2(10, 100, 0.5, 1).Arrivals(1)
	for b.Loop() {
		src.Next()
	}
}

func TestPiecewiseMAP(t *testing.T) {
	maps := []MAP2{MMPP2(10, 10, 1, 1), MMPP2(50, 50, 1, 1), MMPP2(5, 100, 0.2, 1)}
	counts := Counts(PiecewiseMAP(maps, 1000*time.Second, 3), 1000*time.Second, 3000*time.Second)
	for i, c := range counts {
		want := maps[i].Rate() * 1000
		if math.Abs(float64(c)-want) > 0.1*want {
			t.Errorf("period %d: arrivals (-want +got): -%.0f ±10%% +%d", i, want, c)
		}
	}
	a := slices.Collect(Seq(PiecewiseMAP(maps, time.Second, 1)))
	if !slices.IsSorted(a) || len(a) == 0 || a[len(a)-1] >= 3*time.Second {
		t.Errorf("piecewise arrivals must be sorted and end within the last period: %d arrivals", len(a))
	}
}
