package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/trace"
)

// sharedData is the shared data directory as seen from this package.
const sharedData = "../../../shared/data"

// cocktailSetup loads Cocktail's data and the first duration of the Twitter trace scaled to a
// mean of 50 req/s, or skips the test when the shared data are absent.
func cocktailSetup(t *testing.T, duration time.Duration) (*CocktailData, *trace.Trace) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(sharedData, CocktailClassTableFile)); err != nil {
		t.Skipf("shared data absent (%v): the Cocktail tests need ../shared/data", err)
	}
	data, err := LoadCocktailData(sharedData)
	if err != nil {
		t.Fatalf("LoadCocktailData: %v", err)
	}
	tr, err := trace.Open(filepath.Join(sharedData, CocktailTwitterTrace))
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	o, err := CocktailTraceOptions(tr, duration, 0)
	if err != nil {
		t.Fatalf("CocktailTraceOptions: %v", err)
	}
	if tr, err = tr.With(o); err != nil {
		t.Fatalf("trace.With: %v", err)
	}
	return data, tr
}

// runCocktail runs the named ensemble policy on the setup.
func runCocktail(t *testing.T, data *CocktailData, tr *trace.Trace, name string, cfg EnsembleConfig) *EnsembleResult {
	t.Helper()
	pol, err := NewEnsemblePolicy(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SpotPrices = data.SpotPrices
	cat := cost.DefaultCatalog()
	res, err := RunEnsemble(context.Background(), cfg, &cat, NewEnsembleWorkload(data, tr, cfg.Seed), pol)
	if err != nil {
		t.Fatalf("RunEnsemble(%s): %v", name, err)
	}
	return res
}

func TestEnsembleExplore(t *testing.T) {
	if os.Getenv("SLOSERVE_EXPLORE") == "" {
		t.Skip("set SLOSERVE_EXPLORE")
	}
	data, tr := cocktailSetup(t, time.Hour)
	for _, name := range []string{"cocktail", "clipper", "clipper-o1", "infaas", "cocktail-od"} {
		for _, fail := range []float64{0, 0.2} {
			cfg := DefaultEnsembleConfig()
			if fail > 0 {
				cfg.FailAt, cfg.FailFraction = 30*time.Minute, fail
			}
			start := time.Now()
			r := runCocktail(t, data, tr, name, cfg)
			s := r.Summary
			t.Logf("%-12s fail %.1f cost $%.3f acc %.4f met %.3f slo %.4f req %d comp %d failed %d models %.2f votes %.2f p99 %.0fms extra %v (%v)",
				name, fail, s.CostUSD.Total, *s.Accuracy, s.Extra["accuracy_target_met_fraction"], s.SLOAttainment, s.Requests, s.Completed, s.Failed,
				s.Extra["mean_models"], s.Extra["mean_votes"], s.LatencyMS.P99, s.Extra, time.Since(start))
			for _, c := range r.Selections {
				t.Logf("   %+v", c)
			}
			for _, p := range r.Pools {
				t.Logf("   %+v", p)
			}
		}
	}
}
