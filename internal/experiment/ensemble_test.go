package experiment

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/trace"
)

// madeUpCocktail is a Cocktail setup without the shared data: the nine ImageNet models of
// ensemble.ImageNetModels with a made-up per-class table (each model's published accuracy, ±10
// images of 50 per class by a fixed pattern, over 40 classes), made-up constraints of Cocktail's
// shape and no spot price series.
func madeUpCocktail(t *testing.T) *sim.CocktailData {
	t.Helper()
	var b strings.Builder
	b.WriteString("model,wnid,correct\n")
	models := ensemble.ImageNetModels()
	for mi, m := range models {
		for c := range 40 {
			n := math.Round(50*m.Accuracy) + float64((mi*31+c*17)%21-10)
			fmt.Fprintf(&b, "%s,n%08d,%d\n", m.Name, c, int(max(0, min(50, n))))
		}
	}
	tab, err := ensemble.ReadClassTable(strings.NewReader(b.String()), sim.CocktailImagesPerClass)
	if err != nil {
		t.Fatal(err)
	}
	d := &sim.CocktailData{Table: tab}
	for _, m := range models {
		m.Accuracy = tab.Accuracy(tab.ModelIndex(m.Name))
		d.Models = append(d.Models, m)
	}
	for _, c := range []struct {
		ms  float64
		acc float64
	}{{120, 0.75}, {100, 0.74}, {150, 0.76}, {70, 0.6}} {
		d.Constraints = append(d.Constraints, sim.EnsembleConstraint{Constraint: ensemble.Constraint{
			Latency: time.Duration(c.ms * float64(time.Millisecond)), Accuracy: c.acc}, Weight: 1})
	}
	return d
}

// TestEnsembleExploreAccounts: the ensemble-explore experiment on the made-up setup (10 minutes
// of the committed Twitter excerpt at 50 req/s) runs every ensemble policy with and without losing
// 20 % of the pools half-way; every run accounts for every request (completed + failed + rejected
// = requests), costs something, reports an accuracy, and cocktail fails no request (every request
// keeps at least one vote); and without failures cocktail is at least 1.3× cheaper than clipper
// and meets the accuracy target more often than infaas (issue 7's acceptance).
func TestEnsembleExploreAccounts(t *testing.T) {
	t.Parallel()
	tr, err := trace.Open("../../testdata/traces/twitter-2017-05-25-0700-30min.rps.csv")
	if err != nil {
		t.Fatal(err)
	}
	o, err := sim.CocktailTraceOptions(tr, 10*time.Minute, 0)
	if err == nil {
		tr, err = tr.With(o)
	}
	if err != nil {
		t.Fatal(err)
	}
	rows, err := EnsembleExplore(context.Background(), madeUpCocktail(t), tr, nil, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteEnsembleRows(&b, rows, false)
	t.Logf("\n%s", b.String())
	if want := 2 * len(sim.EnsemblePolicyNames()); len(rows) != want {
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
