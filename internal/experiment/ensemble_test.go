package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	simens "github.com/sloserve/sloserve/internal/sim/ensemble"
)

// TestEnsembleExploreAccounts: the ensemble-explore experiment on the fixture's made-up Cocktail
// setup (the first 10 minutes of the Twitter trace at 50 req/s) runs every ensemble policy with and without losing
// 20 % of the pools half-way; every run accounts for every request (completed + failed + rejected
// = requests), costs something, reports an accuracy, and cocktail fails no request (every request
// keeps at least one vote); and without failures cocktail is at least 1.3× cheaper than clipper
// and meets the accuracy target more often than infaas (issue 7's acceptance).
func TestEnsembleExploreAccounts(t *testing.T) {
	data, tr, err := cocktailInputs(Options{Data: fixture, Duration: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := EnsembleExplore(context.Background(), data, tr, nil, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteEnsembleRows(&b, rows, false)
	t.Logf("\n%s", b.String())
	if want := 2 * len(simens.EnsemblePolicyNames()); len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	by := map[string]EnsembleRow{}
	for _, r := range rows {
		if r.Fail == 0 {
			by[r.Policy] = r
		}
		s := r.Result.Summary
		if s.Requests == 0 || s.Completed+s.Failed+s.Rejected != s.Requests || s.CostUSD.Total <= 0 || s.Accuracy == nil {
			t.Errorf("%s fail %.1f: requests %d = completed %d + failed %d + rejected %d? cost $%v, accuracy %v",
				r.Policy, r.Fail, s.Requests, s.Completed, s.Failed, s.Rejected, s.CostUSD.Total, s.Accuracy)
		}
		if r.Policy == "cocktail" && s.Failed != 0 {
			t.Errorf("cocktail fail %.1f: %d failed requests, want 0", r.Fail, s.Failed)
		}
	}
	// Issue 7's acceptance (TestCocktailAcceptance on the shared data), here on the made-up table.
	ck, cl, inf := by["cocktail"].Result.Summary, by["clipper"].Result.Summary, by["infaas"].Result.Summary
	if cl.CostUSD.Total < 1.3*ck.CostUSD.Total {
		t.Errorf("clipper $%.3f, cocktail $%.3f: want cocktail at least 1.3× cheaper", cl.CostUSD.Total, ck.CostUSD.Total)
	}
	if ck.Extra["accuracy_target_met_fraction"] <= inf.Extra["accuracy_target_met_fraction"] {
		t.Errorf("accuracy target met: cocktail %.3f, infaas %.3f: want cocktail more often", ck.Extra["accuracy_target_met_fraction"], inf.Extra["accuracy_target_met_fraction"])
	}
}
