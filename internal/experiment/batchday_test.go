package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// TestBatchDayBatchCheaperWithinSLO is the claim of docs/batch.md's whole-day table on a small
// run without the shared data: a made-up serverless profile (1 s for one request plus 0.3 s per
// further request in the batch, whatever the memory), two hours of Poisson arrivals at 20 and
// 40 req/s, p95 ≤ 3 s, with and without service noise: batch meets the SLO with batches above one
// and costs less than lambda, which runs every request alone.
func TestBatchDayBatchCheaperWithinSLO(t *testing.T) {
	poly := profile.Polynomial{Model: "made-up", Coef: []float64{0.7, 0.3}, MinMemoryMB: 1280, MaxMemoryMB: 3008, MaxBatch: 20}
	poisson := func(rate float64) trace.MAP2 { return trace.MMPP2(rate, rate, 1, 1) }
	rows, err := BatchDay(context.Background(), profile.Model{Name: "made-up", Serverless: poly}, []trace.MAP2{poisson(20), poisson(40)},
		slo.Spec{Threshold: 3 * time.Second, Target: 0.95}, []float64{0, sim.DefaultNoiseCV})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(rows); i += 2 {
		l, b := rows[i].Summary, rows[i+1].Summary
		t.Logf("noise %g: lambda %.4f $%.4f; batch %.4f $%.4f mean batch %.2f", rows[i].NoiseCV, l.SLOAttainment, l.CostUSD.Total,
			b.SLOAttainment, b.CostUSD.Total, b.MeanBatchSize)
		if b.SLOAttainment < 0.95 || b.MeanBatchSize <= 1 {
			t.Errorf("noise %g: batch attainment %.4f, mean batch %.2f: want ≥ 0.95 with batches", rows[i].NoiseCV, b.SLOAttainment, b.MeanBatchSize)
		}
		if b.CostUSD.Total >= l.CostUSD.Total {
			t.Errorf("noise %g: batch $%.4f ≥ lambda $%.4f", rows[i].NoiseCV, b.CostUSD.Total, l.CostUSD.Total)
		}
	}
}
