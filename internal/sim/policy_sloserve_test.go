package sim

import (
	"context"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
)

func TestSloserveServerlessOnly(t *testing.T) {
	m := profile.Model{Name: "m", Serverless: DefaultModel().Serverless}
	cat := cost.DefaultCatalog()
	p, err := New("sloserve", Env{Catalog: &cat, Model: m, SLO: slo.Spec{Threshold: 600 * time.Millisecond, Target: 0.98}, Load: LoadStats{MeanRPS: 30, PeakRPS: 60}})
	if err != nil {
		t.Fatalf("New(sloserve): %v", err)
	}
	if p.Scaler != nil || len(p.Initial) != 0 {
		t.Fatalf("got a VM tier (scaler %v, %d initial), want none", p.Scaler, len(p.Initial))
	}
	cfg := DefaultConfig()
	cfg.SLO = slo.Spec{Threshold: 600 * time.Millisecond, Target: 0.98}
	res, err := Run(context.Background(), cfg, &cat, m, p, newPoisson(30, 6000, 3))
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary; s.CostUSD.VM != 0 || s.SLOAttainment < 0.98 || s.MeanBatchSize <= 1 {
		t.Errorf("summary: VM $%v, attainment %v, mean batch %v; want $0, ≥ 0.98 and batching", s.CostUSD.VM, s.SLOAttainment, s.MeanBatchSize)
	}
}
