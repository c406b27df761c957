package experiment

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCocktailFairClipper is Cocktail's headline against the fair Clipper (issue #17) on the
// fixture's made-up Cocktail setup (the first 10 minutes of the Twitter trace at 50 req/s):
// against clipper-fair — latency-feasible full ensembles with Cocktail's own voting, autoscaler
// and spot market — Cocktail is within [0.9, 1.3]× of its cost and not more accurate (the
// issue measured 1.07× cheaper and 1.8 points less accurate on the shared data), while the
// paper's Clipper (all nine models for every request, pools for the peak) costs 2× or more.
// InFaaS on the same spot market is cheaper than Cocktail and meets the accuracy target less
// often.
func TestCocktailFairClipper(t *testing.T) {
	data, tr, err := cocktailInputs(Options{Data: fixture, Duration: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := FairEnsemble(context.Background(), data, tr)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteEnsembleRows(&b, rows, false)
	t.Logf("\n%s", b.String())
	by := map[string]EnsembleRow{}
	for _, r := range rows {
		by[r.Policy] = r
	}
	ck, cl, fair, inf := by["cocktail"].Result.Summary, by["clipper"].Result.Summary, by["clipper-fair"].Result.Summary, by["infaas-spot"].Result.Summary
	if x := fair.CostUSD.Total / ck.CostUSD.Total; x < 0.9 || x > 1.3 {
		t.Errorf("clipper-fair costs %.2f× cocktail, want in [0.9, 1.3]×", x)
	}
	if x := cl.CostUSD.Total / ck.CostUSD.Total; x < 2 {
		t.Errorf("the paper's clipper costs %.2f× cocktail, want ≥ 2×", x)
	}
	if accuracy(ck) > accuracy(fair)+0.005 {
		t.Errorf("cocktail accuracy %.4f, clipper-fair %.4f: want cocktail no more accurate (within 0.5 points)", accuracy(ck), accuracy(fair))
	}
	if inf.CostUSD.Total >= ck.CostUSD.Total || inf.Extra["accuracy_target_met_fraction"] >= ck.Extra["accuracy_target_met_fraction"] {
		t.Errorf("infaas-spot $%.3f target met %.3f, cocktail $%.3f %.3f: want infaas-spot cheaper and meeting the target less often",
			inf.CostUSD.Total, inf.Extra["accuracy_target_met_fraction"], ck.CostUSD.Total, ck.Extra["accuracy_target_met_fraction"])
	}
}
