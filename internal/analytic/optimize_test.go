package analytic

import (
	"errors"
	"math"
	"testing"
	"time"
)

// smallGrid keeps property tests fast.
var smallGrid = Grid{MemoryMinMB: 1280, MemoryMaxMB: 3008, MemoryStepMB: 256, MaxBatch: 8,
	TimeoutStep: 50 * time.Millisecond, TimeoutMax: 400 * time.Millisecond}

// TestOptimizeIsTheGridOptimum checks Eq. 2 and Eq. 3 against a brute-force scan that evaluates
// every configuration independently with Analyze: the plan is feasible and nothing feasible is
// better.
func TestOptimizeIsTheGridOptimum(t *testing.T) {
	a := mustMAP(t)(MMPP2(10, 60, 0.2, 0.3))
	for _, tc := range []struct {
		name string
		p    Problem
	}{
		{"min cost, p95 ≤ 4 s", Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: 4 * time.Second, Grid: smallGrid}},
		{"min cost, p99 ≤ 6 s", Problem{Arrivals: a, Service: TFInceptionV4, Percentile: 0.99, SLO: 6 * time.Second, Grid: smallGrid}},
		{"min latency, budget", Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, Objective: MinLatency, Budget: 4e-5, Grid: smallGrid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := Optimize(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			price := DefaultPricing()
			n := 0
			for b := 1; b <= smallGrid.MaxBatch; b++ {
				ts := []time.Duration{0}
				if b > 1 {
					ts = ts[:0]
					for to := smallGrid.TimeoutStep; to <= smallGrid.TimeoutMax; to += smallGrid.TimeoutStep {
						ts = append(ts, to)
					}
				}
				for _, to := range ts {
					bt, err := Analyze(tc.p.Arrivals, b, to.Seconds(), StartExact)
					if err != nil {
						t.Fatal(err)
					}
					for m := smallGrid.MemoryMinMB; m <= smallGrid.MemoryMaxMB; m += smallGrid.MemoryStepMB {
						n++
						svc := polyService(tc.p.Service.(Polynomial), b, m)
						q, _ := bt.Quantile(svc, tc.p.Percentile)
						c := 0.0
						for k, pk := range bt.BatchPMF() {
							c += pk * price.CallCost(svc[k], m)
						}
						c /= bt.MeanBatchSize()
						switch tc.p.Objective {
						case MinCost:
							if q <= tc.p.SLO.Seconds()-1e-3 && c < plan.CostPerRequest*(1-1e-6) {
								t.Errorf("B=%d T=%v M=%d costs %.4g < plan's %.4g with P=%.3f s", b, to, m, c, plan.CostPerRequest, q)
							}
						case MinLatency:
							if c <= tc.p.Budget && q < plan.LatencyMS/1000-1e-3 {
								t.Errorf("B=%d T=%v M=%d has P=%.4f s < plan's %.4f s within budget", b, to, m, q, plan.LatencyMS/1000)
							}
						}
					}
				}
			}
			if plan.Explored != n {
				t.Errorf("explored: (-want +got) %d %d", n, plan.Explored)
			}
			switch tc.p.Objective {
			case MinCost:
				if plan.LatencyMS > float64(tc.p.SLO.Milliseconds())+1e-3 {
					t.Errorf("plan P = %.1f ms > SLO %v", plan.LatencyMS, tc.p.SLO)
				}
			case MinLatency:
				if plan.CostPerRequest > tc.p.Budget {
					t.Errorf("plan costs %.4g > budget %.4g", plan.CostPerRequest, tc.p.Budget)
				}
			}
			t.Logf("%+v", plan)
		})
	}
}

func TestOptimizeInfeasibleAndBadInput(t *testing.T) {
	a := mustMAP(t)(Poisson(20))
	t.Run("SLO below the fastest service time", func(t *testing.T) {
		plan, err := Optimize(Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: time.Second, Grid: smallGrid})
		if !errors.Is(err, ErrInfeasible) {
			t.Fatalf("error = %v, want ErrInfeasible", err)
		}
		if plan.Feasible || plan.MaxBatch != 1 || plan.MemoryMB != 2816 {
			t.Errorf("best effort: (-want +got) {B:1 M:2816 (largest on the grid) infeasible} %+v", plan)
		}
	})
	for _, tc := range []struct {
		name string
		p    Problem
	}{
		{"no arrivals", Problem{Service: TFResnetV2, Percentile: 0.95, SLO: time.Second}},
		{"percentile", Problem{Arrivals: a, Service: TFResnetV2, Percentile: 95, SLO: time.Second}},
		{"no SLO", Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95}},
		{"no budget", Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, Objective: MinLatency}},
		{"memory outside the profile", Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: 5 * time.Second,
			Grid: Grid{MemoryMinMB: 128, MemoryMaxMB: 1024, MemoryStepMB: 64, MaxBatch: 4, TimeoutStep: time.Millisecond, TimeoutMax: time.Millisecond}}},
		{"bad grid", Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: time.Second, Grid: Grid{MemoryMinMB: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Optimize(tc.p); err == nil || errors.Is(err, ErrInfeasible) {
				t.Errorf("error = %v, want a validation error", err)
			}
		})
	}
}

func TestCallCostIsEq1(t *testing.T) {
	p := DefaultPricing()
	// 1 s at 1024 MB: 1 GB-s.
	if got, want := p.CallCost(1, 1024), 1.66667e-5+2e-7; math.Abs(got-want) > 1e-15 {
		t.Errorf("CallCost: (-want +got) %g %g", want, got)
	}
	p.Granularity = 100 * time.Millisecond
	if got, want := p.CallCost(0.101, 1024), 0.2*1.66667e-5+2e-7; math.Abs(got-want) > 1e-15 {
		t.Errorf("CallCost 100 ms slices: (-want +got) %g %g", want, got)
	}
}

// BenchmarkOptimizeFullGrid is the performance goal: the default grid (memory inside
// TF-resnetV2's domain, 28 sizes; B = 1..20; 49 timeouts: 26,096 configurations) for the
// Twitter hour-0 MAP(2) in under 1 s on one core (BATCH: < 10 s on a t2.nano).
func BenchmarkOptimizeFullGrid(b *testing.B) {
	a := mustMAP(b)(NewMAP([][]float64{{-14.625001, 0}, {0, -35.171226}}, [][]float64{{0.051020, 14.573981}, {0.063796, 35.107429}}))
	p := Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: 5 * time.Second}
	for b.Loop() {
		if _, err := Optimize(p); err != nil {
			b.Fatal(err)
		}
	}
}
