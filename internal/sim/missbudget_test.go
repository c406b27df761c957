package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
)

// TestMissBudget: a policy that misses every request (Lambda against a 50 ms SLO) stops with ErrMissBudget once its misses
// pass the budget, long before its arrivals end; without a budget, or with one it stays under,
// the same run completes.
func TestMissBudget(t *testing.T) {
	cat := cost.DefaultCatalog()
	cfg := DefaultConfig()
	cfg.SLO.Threshold = 50 * time.Millisecond
	env := Env{Catalog: &cat, Model: DefaultModel(), SLO: cfg.SLO, Load: LoadStats{MeanRPS: 10, PeakRPS: 10}}
	run := func(budget int64) (*Result, error) {
		p, err := New("lambda", env) // Inception on Lambda takes ~150 ms: every request is late
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.MissBudget = budget
		return Run(context.Background(), c, &cat, env.Model, p, newPoisson(100, 3000, 3))
	}
	if r, err := run(100); !errors.Is(err, ErrMissBudget) {
		if r != nil {
			t.Logf("summary: %d requests, attainment %.4f, failed %d, rejected %d", r.Summary.Requests, r.Summary.SLOAttainment, r.Summary.Failed, r.Summary.Rejected)
		}
		t.Fatalf("budget 100: error %v, want ErrMissBudget", err)
	}
	full, err := run(0)
	if err != nil {
		t.Fatal(err)
	}
	missed := full.Summary.Requests - int64(full.Summary.SLOAttainment*float64(full.Summary.Requests)+0.5)
	if missed <= 100 {
		t.Fatalf("the overloaded run missed only %d requests; the test needs > 100", missed)
	}
	if _, err := run(full.Summary.Requests + 1); err != nil {
		t.Errorf("budget above every request: %v, want the run to complete", err)
	}
	bad := cfg
	bad.MissBudget = -1
	if err := bad.Validate(); err == nil {
		t.Error("MissBudget −1: Validate passed, want an error")
	}
}

// TestCostBudget: a VM fleet's run stops with ErrCostBudget once its bill so far passes the
// budget (half its full bill here), and completes unchanged with a budget above its bill.
func TestCostBudget(t *testing.T) {
	cat := cost.DefaultCatalog()
	cfg := DefaultConfig()
	env := Env{Catalog: &cat, Model: DefaultModel(), SLO: cfg.SLO, Load: LoadStats{MeanRPS: 20, PeakRPS: 20}}
	run := func(budget float64) (*Result, error) {
		p, err := New("fixed", env)
		if err != nil {
			t.Fatal(err)
		}
		c := cfg
		c.CostBudget = budget
		return Run(context.Background(), c, &cat, env.Model, p, newPoisson(20, 3000, 3))
	}
	full, err := run(0)
	if err != nil {
		t.Fatal(err)
	}
	bill := full.Summary.CostUSD.Total
	if bill <= 0 {
		t.Fatalf("the fleet's bill is %v; the test needs > 0", bill)
	}
	if _, err := run(bill / 2); !errors.Is(err, ErrCostBudget) {
		t.Fatalf("budget %v (half the bill %v): error %v, want ErrCostBudget", bill/2, bill, err)
	}
	again, err := run(bill * 1.01)
	if err != nil || again.Summary.CostUSD.Total != bill || again.Summary.SLOAttainment != full.Summary.SLOAttainment {
		t.Errorf("budget above the bill: %v, cost %v (want %v), want the same run", err, again.Summary.CostUSD.Total, bill)
	}
	bad := cfg
	bad.CostBudget = -1
	if err := bad.Validate(); err == nil {
		t.Error("CostBudget −1: Validate passed, want an error")
	}
}
