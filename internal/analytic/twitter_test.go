package analytic

import (
	"flag"
	"math"
	"sort"
	"testing"
	"time"
)

var twitterDay = flag.Bool("twitter-day", false, "run TestTwitterDay over all 24 hours and both models (about a minute)")

// TestTwitterDay is BATCH Fig. 14 on the Twitter day: hour by hour, with BATCH's published MAP(2)
// of the hour as the arrival model, the optimiser's configuration keeps the simulated p95 within
// the SLO and costs less per request than vanilla Lambda at maximum memory (no batching, 3008 MB).
// The SLO is twice the model's single-request latency at 3008 MB. By default it checks three
// hours of TF-resnetV2; -twitter-day runs the whole table of docs/batch.md.
func TestTwitterDay(t *testing.T) {
	if testing.Short() || (raceEnabled && !*twitterDay) {
		t.Skip("long: optimises and simulates whole hours (run without -race or -short)")
	}
	hours := []int{1, 9, 21}
	models := []Polynomial{TFResnetV2}
	if *twitterDay {
		hours = hours[:0]
		for w := 1; w <= 24; w++ {
			hours = append(hours, w)
		}
		models = append(models, TFInceptionV4)
	}
	price := DefaultPricing()
	for _, svcModel := range models {
		s1 := svcModel.ServiceTime(1, 3008)
		slo := time.Duration(2 * s1 * float64(time.Second)).Round(time.Millisecond)
		vanilla := price.CallCost(s1, 3008)
		t.Logf("%s: SLO p95 ≤ %v; vanilla Lambda (3008 MB, B=1): p95 %.3f s, $%.4g per request", svcModel.Name, slo, s1, vanilla)
		t.Logf("| hour | rate/s | memory MB | B | T ms | E[K] | p95 model s | p95 sim s | cost/req model | cost/req sim | vs vanilla |")
		t.Logf("|---|---|---|---|---|---|---|---|---|---|---|")
		for _, w := range hours {
			a := publishedTwitterMAP(t, w)
			plan, err := Optimize(Problem{Arrivals: a, Service: svcModel, Percentile: 0.95, SLO: slo})
			if err != nil {
				t.Fatalf("hour %d: %v", w-1, err)
			}
			// One simulated hour of the MAP.
			var ia []float64
			s := NewSampler(a, newRand(uint64(w)))
			for tot := 0.0; tot < 3600; {
				d := s.Next()
				tot += d
				ia = append(ia, d)
			}
			svc := polyService(svcModel, plan.MaxBatch, plan.MemoryMB)
			lat, batches := SimulateBuffer(ia, plan.MaxBatch, plan.Timeout.Seconds(), svc)
			sort.Float64s(lat)
			p95 := EmpiricalQuantile(lat, 0.95)
			cost := 0.0
			for _, k := range batches {
				cost += price.CallCost(svc[k-1], plan.MemoryMB)
			}
			cost /= float64(len(lat))
			t.Logf("| %d | %.1f | %d | %d | %g | %.2f | %.3f | %.3f | %.4g | %.4g | %.1f %% |", w-1, a.Rate(), plan.MemoryMB, plan.MaxBatch,
				plan.TimeoutMS, plan.MeanBatchSize, plan.LatencyMS/1000, p95, plan.CostPerRequest, cost, 100*cost/vanilla)
			if p95 > slo.Seconds()*1.01 {
				t.Errorf("%s hour %d: simulated p95 %.3f s > SLO %v", svcModel.Name, w-1, p95, slo)
			}
			if cost >= vanilla {
				t.Errorf("%s hour %d: cost per request $%.4g ≥ vanilla $%.4g", svcModel.Name, w-1, cost, vanilla)
			}
			if math.Abs(cost-plan.CostPerRequest)/cost > 0.02 {
				t.Errorf("%s hour %d: cost per request (-sim +model) %.4g %.4g", svcModel.Name, w-1, cost, plan.CostPerRequest)
			}
		}
	}
}
