package analytic

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// noisyAttainment replays inter-arrivals through the buffer (SimulateBuffer) and returns the
// fraction of requests within slo seconds when each batch's service time is multiplied by one
// log-normal factor of mean 1 and coefficient of variation cv.
func noisyAttainment(ia []float64, b int, timeout float64, svc []float64, slo, cv float64, seed uint64) float64 {
	lat, batches := SimulateBuffer(ia, b, timeout, svc)
	r := newRand(seed)
	sig := math.Sqrt(math.Log1p(cv * cv))
	ok, i := 0, 0
	for _, k := range batches {
		x := math.Exp(sig*r.NormFloat64() - sig*sig/2)
		for range k {
			if lat[i]-svc[k-1]+svc[k-1]*x <= slo {
				ok++
			}
			i++
		}
	}
	return float64(ok) / float64(len(lat))
}

// TestAttainmentMatchesSimulation: Batching.Attainment agrees with a simulated buffer whose
// batches' service times carry a 5 % or 10 % log-normal noise, on BATCH's TF-resnetV2 profile at
// the SLO of its Twitter day (3.053 s), where the misses come from the noise.
func TestAttainmentMatchesSimulation(t *testing.T) {
	n := 400000
	if testing.Short() || raceEnabled {
		n = 100000
	}
	const slo = 3.053
	seed := uint64(10)
	for _, tc := range []struct {
		rate    float64
		b       int
		timeout float64
		mem     int
		cv      float64
	}{
		{50, 3, 0.49, 3008, 0.05},
		{50, 3, 0.49, 2880, 0.05},
		{35, 3, 0.1, 2944, 0.05},
		{20, 2, 0.2, 2048, 0.1},
	} {
		seed++
		a := mustMAP(t)(Poisson(tc.rate))
		bt, err := Analyze(a, tc.b, tc.timeout, StartExact)
		if err != nil {
			t.Fatal(err)
		}
		svc := polyService(TFResnetV2, tc.b, tc.mem)
		got := bt.Attainment(svc, slo, tc.cv)
		want := noisyAttainment(sample(a, n, seed), tc.b, tc.timeout, svc, slo, tc.cv, seed)
		// The simulated miss rate has a binomial error of ~√(p/n) ≈ 0.02 points at n = 400k.
		tol := 4*math.Sqrt((1-want)/float64(n)) + 2e-4
		t.Logf("rate %v B %d T %v %d MB cv %v: model %.5f, simulated %.5f", tc.rate, tc.b, tc.timeout, tc.mem, tc.cv, got, want)
		if math.Abs(got-want) > tol {
			t.Errorf("rate %v B %d T %v %d MB cv %v: model %.5f, simulated %.5f (tolerance %.5f)",
				tc.rate, tc.b, tc.timeout, tc.mem, tc.cv, got, want, tol)
		}
	}
}

// TestAttainmentNoNoise: cv = 0 is LatencyCDF, and a small cv tends to it away from its steps.
func TestAttainmentNoNoise(t *testing.T) {
	a := mustMAP(t)(Poisson(20))
	bt, err := Analyze(a, 5, 0.2, StartExact)
	if err != nil {
		t.Fatal(err)
	}
	svc := linearService(5)
	for _, x := range []float64{0.05, 0.1, 0.17, 0.25, 0.3} {
		if got, want := bt.Attainment(svc, x, 0), bt.LatencyCDF(svc, x); got != want {
			t.Errorf("cv 0 at %v: %v, want LatencyCDF %v", x, got, want)
		}
		if got, want := bt.Attainment(svc, x, 1e-4), bt.LatencyCDF(svc, x); math.Abs(got-want) > 0.01 {
			t.Errorf("cv 1e-4 at %v: %v, want ≈ LatencyCDF %v", x, got, want)
		}
	}
	// More noise never helps a threshold well above the latencies.
	if lo, hi := bt.Attainment(svc, 0.4, 0.05), bt.Attainment(svc, 0.4, 0.2); !(hi < lo && lo <= 1) {
		t.Errorf("attainment at 0.4 s: cv 0.05 %v, cv 0.2 %v: want more noise to miss more", lo, hi)
	}
}

// resnetSvc is TF-resnetV2's polynomial over BATCH's fitted domain.
type resnetSvc struct{}

func (resnetSvc) ServiceTime(k, m int) float64 { return TFResnetV2.ServiceTime(k, m) }
func (resnetSvc) Domain() (int, int, int, int) { return 1, 20, 1280, 3008 }

// TestReferenceFloorTwitterDay is BATCH's Twitter day (docs/scoreboard.md) on the model: at
// 50 req/s, P_95 ≤ 0.92 × 3.053 s alone picks a memory below BATCH's 3008 MB that is predicted
// (and measured) to miss the SLO more often than BATCH's own plan under a 5 % service noise; with
// BATCH's problem as the Reference the plan costs no more than BATCH's and attains at least as
// much.
func TestReferenceFloorTwitterDay(t *testing.T) {
	a := mustMAP(t)(Poisson(50))
	const cv = 0.05
	slo := 3053 * time.Millisecond
	grid := Grid{MemoryMinMB: 1280, MemoryMaxMB: 3008, MemoryStepMB: 64, MaxBatch: 20,
		TimeoutStep: 50 * time.Millisecond, TimeoutMax: 450 * time.Millisecond}
	ref := &Reference{Service: resnetSvc{}, Percentile: 0.95, SLO: slo, ServiceCV: cv,
		Grid: Grid{MemoryMinMB: 3008, MemoryMaxMB: 3008, MemoryStepMB: 1, MaxBatch: 20,
			TimeoutStep: grid.TimeoutStep, TimeoutMax: grid.TimeoutMax}}
	batch, err := Optimize(ref.problem(a, Pricing{}))
	if err != nil {
		t.Fatal(err)
	}
	if batch.MemoryMB != 3008 || batch.MaxBatch != 3 || !(batch.Attainment > 0.99) {
		t.Fatalf("BATCH's plan: %+v, want 3008 MB, B = 3, attainment > 99 %%", batch)
	}
	cfg := DefaultPolicyConfig()
	cfg.SLO, cfg.Grid = time.Duration(0.92*float64(slo)), grid
	guardOnly, err := cfg.Solve(a, resnetSvc{})
	if err != nil {
		t.Fatal(err)
	}
	bt, err := Analyze(a, guardOnly.MaxBatch, guardOnly.Timeout.Seconds(), StartExact)
	if err != nil {
		t.Fatal(err)
	}
	guardAtt := bt.Attainment(polyService(TFResnetV2, guardOnly.MaxBatch, guardOnly.MemoryMB), slo.Seconds(), cv)
	if !(guardOnly.MemoryMB < 3008 && guardOnly.CostPerRequest < batch.CostPerRequest && guardAtt < batch.Attainment-0.003) {
		t.Errorf("guard only: %d MB, $%.4g, attainment %.4f; BATCH %d MB, $%.4g, %.4f: want a cheaper memory that misses more (the bug this guards against)",
			guardOnly.MemoryMB, guardOnly.CostPerRequest, guardAtt, batch.MemoryMB, batch.CostPerRequest, batch.Attainment)
	}
	cfg.Reference = ref
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := cfg.Solve(a, resnetSvc{})
	if err != nil {
		t.Fatal(err)
	}
	if p.CostPerRequest > batch.CostPerRequest*(1+1e-12) || p.Attainment < batch.Attainment {
		t.Errorf("with the reference: %d MB B %d T %v $%.4g attainment %.5f; BATCH $%.4g %.5f: want no dearer and no worse",
			p.MemoryMB, p.MaxBatch, p.Timeout, p.CostPerRequest, p.Attainment, batch.CostPerRequest, batch.Attainment)
	}
	// Nothing on the model is strictly cheaper than BATCH's plan and as good, even without the
	// guard and at 1 MB memory steps: B = 3 is the largest batch within the SLO, at B = 3 both the
	// cost and the misses fall as the memory grows, and 3008 MB is the top of the profile.
	free := cfg
	free.SLO, free.Grid.MemoryStepMB, free.Grid.MemoryMinMB = slo, 1, 2600
	if q, err := free.Solve(a, resnetSvc{}); err != nil || q.CostPerRequest < batch.CostPerRequest*(1-1e-9) {
		t.Errorf("unguarded, 1 MB steps: %+v (%v); want nothing cheaper than BATCH's $%.5g at its attainment", q, err, batch.CostPerRequest)
	}
	if !strings.Contains(p.Reason, "attainment floor") {
		t.Errorf("reason %q: want it to name the attainment floor", p.Reason)
	}
}

// TestAttainmentFloorDropped: when no configuration within the SLO constraint reaches the floor,
// the plan is the cheapest within the SLO, and says so.
func TestAttainmentFloorDropped(t *testing.T) {
	a := mustMAP(t)(Poisson(50))
	prob := Problem{Arrivals: a, Service: resnetSvc{}, Percentile: 0.95, Objective: MinCost, SLO: 2800 * time.Millisecond,
		Grid: Grid{MemoryMinMB: 2880, MemoryMaxMB: 2880, MemoryStepMB: 1, MaxBatch: 5, TimeoutStep: 50 * time.Millisecond,
			TimeoutMax: 450 * time.Millisecond}}
	plain, err := Optimize(prob)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is served within 1 s (S_1 = 1.57 s at 2880 MB).
	prob.Attainment = AttainmentSpec{Threshold: time.Second, ServiceCV: 0.05, Min: 0.5}
	got, err := Optimize(prob)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxBatch != plain.MaxBatch || got.Timeout != plain.Timeout || !got.Feasible || got.Attainment >= prob.Attainment.Min ||
		!strings.Contains(got.Reason, "none reaches") {
		t.Errorf("unreachable floor: %+v; without it %+v", got, plain)
	}
	prob.Attainment.Min = 1.5
	if _, err := Optimize(prob); err == nil {
		t.Error("attainment.min 1.5: want a validation error")
	}
	bad := PolicyConfig{Window: time.Hour, Period: time.Hour, Retry: time.Minute, MinSamples: 10, Percentile: 0.95,
		SLO: time.Second, Grid: DefaultGrid(), Reference: &Reference{Percentile: 0.95, SLO: time.Second}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "reference") {
		t.Errorf("reference without a service: %v, want a reference error", err)
	}
	if _, err := Optimize(Problem{Arrivals: a, Service: resnetSvc{}, Percentile: 0.95, SLO: time.Millisecond,
		Attainment: AttainmentSpec{Threshold: time.Second, ServiceCV: 0.05}}); !errors.Is(err, ErrInfeasible) {
		t.Errorf("infeasible SLO: %v, want ErrInfeasible", err)
	}
}

// TestOptimizeServiceCVHoldsUnderNoise is issue #18 item 6 on the optimiser: BATCH's TF-resnetV2
// at 3008 MB, 50 req/s Poisson, p95 ≤ 5 s. The deterministic plan (ServiceCV 0) sits a few ms
// under the SLO and a buffer whose batches carry a 5 % log-normal noise misses the target with
// it; with ServiceCV 0.05 the plan is predicted and simulated to meet it, and it is the cheapest
// configuration on the grid that is predicted to.
func TestOptimizeServiceCVHoldsUnderNoise(t *testing.T) {
	const slo, cv = 5 * time.Second, 0.05
	a := mustMAP(t)(Poisson(50))
	grid := DefaultGrid()
	grid.MemoryMinMB, grid.MemoryMaxMB = 3008, 3008
	ia := sample(a, 200000, 18)
	plans := map[float64]Plan{}
	for _, c := range []float64{0, cv} {
		plan, err := Optimize(Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: slo, Grid: grid,
			ServiceCV: c, Attainment: AttainmentSpec{Threshold: slo, ServiceCV: cv}})
		if err != nil {
			t.Fatal(err)
		}
		plans[c] = plan
		sim := noisyAttainment(ia, plan.MaxBatch, plan.Timeout.Seconds(), polyService(TFResnetV2, plan.MaxBatch, 3008), slo.Seconds(), cv, 5)
		t.Logf("ServiceCV %g: B %d T %v P95 %.1f ms (CV %g), predicted within SLO at CV %g %.4f, simulated %.4f, $%.4g/req",
			c, plan.MaxBatch, plan.Timeout, plan.LatencyMS, plan.ServiceCV, cv, plan.Attainment, sim, plan.CostPerRequest)
		switch {
		case c == 0 && sim >= 0.95:
			t.Errorf("deterministic plan attains %.4f ≥ 0.95 under noise: the case no longer shows the defect", sim)
		case c > 0 && (plan.Attainment < 0.95 || sim < 0.95):
			t.Errorf("ServiceCV %g: predicted %.4f, simulated %.4f, want both ≥ 0.95", c, plan.Attainment, sim)
		case c > 0 && plan.LatencyMS > float64(slo.Milliseconds()):
			t.Errorf("ServiceCV %g: P95 under the noise %.1f ms > SLO", c, plan.LatencyMS)
		}
	}
	if plans[cv].CostPerRequest < plans[0].CostPerRequest {
		t.Errorf("noise-aware plan costs %.4g < deterministic %.4g: it must be a subset's optimum", plans[cv].CostPerRequest, plans[0].CostPerRequest)
	}
	// Nothing cheaper on the grid is predicted to meet the target under the noise.
	best := plans[cv]
	price := DefaultPricing()
	for b := 2; b <= grid.MaxBatch; b++ {
		for to := grid.TimeoutStep; to <= grid.TimeoutMax; to += 70 * time.Millisecond {
			bt, err := Analyze(a, b, to.Seconds(), StartExact)
			if err != nil {
				t.Fatal(err)
			}
			svc := polyService(TFResnetV2, b, 3008)
			c := 0.0
			for k, pk := range bt.BatchPMF() {
				c += pk * price.CallCost(svc[k], 3008)
			}
			c /= bt.MeanBatchSize()
			if att := bt.Attainment(svc, slo.Seconds(), cv); att >= 0.95+1e-3 && c < best.CostPerRequest*(1-1e-6) {
				t.Errorf("B=%d T=%v attains %.4f and costs %.4g < plan's %.4g", b, to, att, c, best.CostPerRequest)
			}
		}
	}
}
