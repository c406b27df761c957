package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	simens "github.com/sloserve/sloserve/internal/sim/ensemble"
)

// TestEnsembleTunedBaselines tunes clipper-fair on the first half of the fixture's made-up
// Cocktail setup (the first 6 minutes of the Twitter trace at 50 req/s) and runs it on the
// second: the search meets the SLO on the tuning half with less staffing than the paper default's
// β = 2, and the tuned row, on the evaluation half, meets the SLO at ≤ 0.95× the untuned row's
// cost there (measured 0.81×). It fails when the knobs are not applied (the tuned row would
// equal the default) or the tuner picks a dearer candidate.
func TestEnsembleTunedBaselines(t *testing.T) {
	data, tr, err := cocktailInputs(Options{Data: fixture, Duration: 6 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tuning, eval, _, err := Split(tr.Name, tr, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := TuneEnsemble(ctx, data, tuning, eval, TunedEnsembleBaseline{Name: "clipper-fair-tuned", Policy: "clipper-fair"})
	if err != nil {
		t.Fatal(err)
	}
	def, err := runEnsembleOptions(ctx, data, eval, "clipper-fair", nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteEnsembleRows(&b, []EnsembleRow{def, r.EnsembleRow}, false)
	t.Logf("%s: %+v\n%s", r.Search.Options.Key(), r.Search.Tuning, b.String())
	if !r.Search.Met || !(r.Search.Options["staffing"].(float64) < simens.DefaultStaffing) {
		t.Errorf("search %+v: want the SLO met on the tuning half with staffing below %v", r.Search, simens.DefaultStaffing)
	}
	ts, ds := r.Result.Summary, def.Result.Summary
	if ts.SLOAttainment < ts.SLO.Target || ts.CostUSD.Total > 0.95*ds.CostUSD.Total {
		t.Errorf("evaluation half: tuned %.4f $%.4f, default $%.4f: want the SLO met at ≤ 0.95× the default's cost", ts.SLOAttainment, ts.CostUSD.Total, ds.CostUSD.Total)
	}
}
