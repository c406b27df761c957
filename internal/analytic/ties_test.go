package analytic

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestOptimizeTiesGoToTheSmallerTimeout: at λT ≫ B every batch fills and all timeouts beyond a
// few fill times cost the same up to floating-point noise; the plan must then be, among the
// timeouts within a relative 1e-6 of the cheapest, the one with the lowest P_p and then the
// smallest (issue #18 item 8), not whichever the rounding favoured.
func TestOptimizeTiesGoToTheSmallerTimeout(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		b    int
	}{{1000, 3}, {500, 5}, {200, 4}, {100, 2}} {
		t.Run(fmt.Sprintf("λ=%g B≤%d", tc.rate, tc.b), func(t *testing.T) {
			a := mustMAP(t)(Poisson(tc.rate))
			grid := DefaultGrid()
			grid.MemoryMinMB, grid.MemoryMaxMB, grid.MaxBatch = 3008, 3008, tc.b
			plan, err := Optimize(Problem{Arrivals: a, Service: TFResnetV2, Percentile: 0.95, SLO: 20 * time.Second, Grid: grid})
			if err != nil {
				t.Fatal(err)
			}
			// At B_max, the timeouts whose cost is within 1e-6 of the cheapest; among them the
			// lowest P_p (to 2 µs), then the smallest timeout.
			price := DefaultPricing()
			svc := polyService(TFResnetV2, tc.b, 3008)
			type row struct {
				to      time.Duration
				cost, q float64
			}
			var rows []row
			minCost := math.Inf(1)
			for to := grid.TimeoutStep; to <= grid.TimeoutMax; to += grid.TimeoutStep {
				bt, err := Analyze(a, tc.b, to.Seconds(), StartExact)
				if err != nil {
					t.Fatal(err)
				}
				c := 0.0
				for k, pk := range bt.BatchPMF() {
					c += pk * price.CallCost(svc[k], 3008)
				}
				c /= bt.MeanBatchSize()
				q, _ := bt.Quantile(svc, 0.95)
				rows = append(rows, row{to, c, q})
				minCost = math.Min(minCost, c)
			}
			var want *row
			ties := 0
			for i, r := range rows {
				if r.cost <= minCost*(1+1e-6) {
					ties++
					if want == nil || r.q < want.q-2e-6 {
						want = &rows[i]
					}
				}
			}
			t.Logf("plan B %d T %v $%.10g P95 %.6f s; %d tied timeouts, want %v (P95 %.6f s)", plan.MaxBatch, plan.Timeout,
				plan.CostPerRequest, plan.LatencyMS/1000, ties, want.to, want.q)
			if plan.MaxBatch != tc.b || plan.Timeout != want.to {
				t.Errorf("plan (B, T): (-want +got) (%d, %v) (%d, %v)", tc.b, want.to, plan.MaxBatch, plan.Timeout)
			}
		})
	}
}
