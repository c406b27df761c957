package analytic

import (
	"fmt"
	"math"
	"testing"
)

// scaleMAP returns a with its time axis stretched so that its mean rate is rate per second.
func scaleMAP(t testing.TB, a *MAP, rate float64) *MAP {
	t.Helper()
	c := rate / a.Rate()
	d0, d1 := a.D0(), a.D1()
	for i := range d0 {
		for j := range d0[i] {
			d0[i][j] *= c
			d1[i][j] *= c
		}
	}
	return mustMAP(t)(NewMAP(d0, d1))
}

// TestAnalyticMatchesSimulation is the acceptance check of issue #5: over a grid of arrival
// processes (Poisson, MMPP(2), MAP(2)), rates, max batch sizes, timeouts and profiles, the
// analytic latency CDF is within Kolmogorov distance 0.05 of a simulated buffer and its p95
// within 10 % of the simulated p95. Run with -v for the table in docs/batch.md.
func TestAnalyticMatchesSimulation(t *testing.T) {
	type arrival struct {
		name string
		make func(rate float64) *MAP
	}
	arrivals := []arrival{
		{"poisson", func(r float64) *MAP { return mustMAP(t)(Poisson(r)) }},
		{"mmpp2", func(r float64) *MAP { return scaleMAP(t, mustMAP(t)(MMPP2(0.4, 1.6, 0.05, 0.05)), r) }},
		{"map2", func(r float64) *MAP { return scaleMAP(t, mustMAP(t)(MAP2(0.2, 1.5, 0.1, 0.05, 0.05, 0.1)), r) }},
	}
	profiles := []struct {
		name string
		svc  func(b int) []float64
	}{
		{"resnetV2@3008MB", func(b int) []float64 { return polyService(TFResnetV2, b, 3008) }},
		{"linear34ms", linearService},
	}
	n := 60000
	if testing.Short() || raceEnabled {
		n = 20000
	}
	t.Logf("| arrivals | rate/s | B | T ms | profile | KS exact | KS Eq.9 | p95 model s | p95 sim s | p95 err %% |")
	t.Logf("|---|---|---|---|---|---|---|---|---|---|")
	worstKS, worstP := 0.0, 0.0
	seed := uint64(1)
	for _, arr := range arrivals {
		for _, rate := range []float64{10, 50} {
			a := arr.make(rate)
			for _, b := range []int{5, 20} {
				for _, timeout := range []float64{0.05, 0.2, 0.5} {
					seed++
					ia := sample(a, n, seed)
					bt, err := Analyze(a, b, timeout, StartExact)
					if err != nil {
						t.Fatal(err)
					}
					for _, pr := range profiles {
						name := fmt.Sprintf("%s/%g/B%d/T%g/%s", arr.name, rate, b, timeout, pr.name)
						svc := pr.svc(b)
						lat, _ := SimulateBuffer(ia, b, timeout, svc)
						ks := Kolmogorov(lat, func(x float64) float64 { return bt.LatencyCDF(svc, x) })
						ksPaper := Kolmogorov(lat, func(x float64) float64 { return bt.PaperLatencyCDF(svc, x) })
						q, err := bt.Quantile(svc, 0.95)
						if err != nil {
							t.Fatal(err)
						}
						qs := EmpiricalQuantile(lat, 0.95)
						rel := math.Abs(q-qs) / qs
						worstKS, worstP = math.Max(worstKS, ks), math.Max(worstP, rel)
						t.Logf("| %s | %g | %d | %g | %s | %.4f | %.4f | %.3f | %.3f | %.2f |", arr.name, rate, b, timeout*1000, pr.name, ks, ksPaper, q, qs, 100*rel)
						if ks > 0.05 {
							t.Errorf("%s: Kolmogorov distance %.4f > 0.05", name, ks)
						}
						if rel > 0.10 {
							t.Errorf("%s: p95 (-sim +model) %.4f %.4f: %.1f %% apart", name, qs, q, 100*rel)
						}
					}
				}
			}
		}
	}
	t.Logf("worst Kolmogorov distance %.4f, worst p95 error %.2f %%", worstKS, 100*worstP)
}

func TestStartPhaseExactIsStationary(t *testing.T) {
	// The exact start-phase distribution must agree with the phase of first requests in a
	// simulation (counted through the batch-size distribution, which depends on it).
	a := scaleMAP(t, mustMAP(t)(MMPP2(0.4, 1.6, 0.05, 0.05)), 20)
	for _, start := range []StartPhase{StartExact, StartPaper} {
		bt, err := Analyze(a, 10, 0.2, start)
		if err != nil {
			t.Fatal(err)
		}
		_, batches := SimulateBuffer(sample(a, 200000, 3), 10, 0.2, linearService(10))
		mean := 0.0
		for _, k := range batches {
			mean += float64(k)
		}
		mean /= float64(len(batches))
		t.Logf("start %d: π(0)=%.3f E[K] model %.3f sim %.3f", start, bt.StartPhase(), bt.MeanBatchSize(), mean)
		if start == StartExact && math.Abs(bt.MeanBatchSize()-mean)/mean > 0.02 {
			t.Errorf("E[K]: (-sim +model) %.3f %.3f", mean, bt.MeanBatchSize())
		}
	}
}

func TestModelOffGrid(t *testing.T) {
	md, err := NewModel(mustMAP(t)(Poisson(10)), 5, 0.01, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		timeout float64
		ok      bool
	}{{"on grid", 0.05, true}, {"zero", 0, true}, {"between points", 0.055, false}, {"beyond horizon", 0.2, false}, {"negative", -0.01, false}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := md.At(tc.timeout, StartExact)
			if (err == nil) != tc.ok {
				t.Errorf("At(%g) error = %v, want ok=%v", tc.timeout, err, tc.ok)
			}
		})
	}
}
