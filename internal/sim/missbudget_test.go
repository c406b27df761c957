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
