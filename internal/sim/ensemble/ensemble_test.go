package ensemble

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
const sharedData = "../../../../shared/data"

// acceptanceDuration is the trace sample of the acceptance tests: Cocktail's full hour with
// SLOSERVE_LONG set, else its first 20 minutes (so the tests stay well under a minute with -race).
func acceptanceDuration() time.Duration {
	if os.Getenv("SLOSERVE_LONG") != "" {
		return time.Hour
	}
	return 20 * time.Minute
}

// cocktailSetup loads Cocktail's data and the first duration of the Twitter trace scaled to a
// mean of 50 req/s, from the shared data or, when it is absent, from the committed fixture.
func cocktailSetup(t *testing.T, duration time.Duration) (*CocktailData, *trace.Trace) {
	t.Helper()
	dir := dataDir(t)
	data, err := LoadCocktailData(dir)
	if err != nil {
		t.Fatalf("LoadCocktailData: %v", err)
	}
	tr, err := trace.Open(filepath.Join(dir, CocktailTwitterTrace))
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

// TestCocktailAcceptance is issue 7's simulated acceptance on Cocktail's setup (first hour of
// the Twitter trace at 50 req/s, the ImageNet per-class table, the constraints of
// cocktail-constants.json): cocktail costs at least 1.3× less than clipper and meets the
// accuracy target for more requests than infaas.
func TestCocktailAcceptance(t *testing.T) {
	data, tr := cocktailSetup(t, acceptanceDuration())
	cfg := DefaultEnsembleConfig()
	got := map[string]*EnsembleResult{}
	for _, name := range []string{"cocktail", "clipper", "infaas"} {
		got[name] = runCocktail(t, data, tr, name, cfg)
		s := got[name].Summary
		t.Logf("%-8s cost $%.3f accuracy %.4f target met %.3f mean models %.2f slo %.4f", name, s.CostUSD.Total, *s.Accuracy,
			s.Extra["accuracy_target_met_fraction"], s.Extra["mean_models"], s.SLOAttainment)
	}
	ck, cl, inf := got["cocktail"].Summary, got["clipper"].Summary, got["infaas"].Summary
	t.Run("cost vs clipper", func(t *testing.T) {
		if r := cl.CostUSD.Total / ck.CostUSD.Total; r < 1.3 {
			t.Errorf("clipper/cocktail cost = %.3f/%.3f = %.2f×, want ≥ 1.3×", cl.CostUSD.Total, ck.CostUSD.Total, r)
		}
	})
	t.Run("accuracy target vs infaas", func(t *testing.T) {
		a, b := ck.Extra["accuracy_target_met_fraction"], inf.Extra["accuracy_target_met_fraction"]
		if !(a > b) {
			t.Errorf("accuracy target met: cocktail %.4f, infaas %.4f; want cocktail > infaas", a, b)
		}
	})
	t.Run("summary fields", func(t *testing.T) {
		for name, r := range got {
			s := r.Summary
			if s.Accuracy == nil || s.Requests == 0 || s.Completed+s.Failed+s.Rejected != s.Requests || s.Policy != name {
				t.Errorf("%s: summary %+v: want accuracy set and every request accounted for", name, s)
			}
			for _, k := range []string{"accuracy_target_met_fraction", "mean_models"} {
				if _, ok := s.Extra[k]; !ok {
					t.Errorf("%s: Extra[%q] missing", name, k)
				}
			}
		}
	})
}

// TestCocktailFailureResilience is Cocktail §6.3.2 in simulation: a fifth of every pool's
// instances fail half-way through; accuracy drops by at most one point and no request is lost.
func TestCocktailFailureResilience(t *testing.T) {
	d := acceptanceDuration()
	data, tr := cocktailSetup(t, d)
	base := runCocktail(t, data, tr, "cocktail", DefaultEnsembleConfig())
	cfg := DefaultEnsembleConfig()
	cfg.FailAt, cfg.FailFraction = d/2, 0.2
	hit := runCocktail(t, data, tr, "cocktail", cfg)
	b, h := base.Summary, hit.Summary
	t.Logf("accuracy %.4f -> %.4f, failed instances %.0f, lost sub-requests %.0f, partial answers %.0f -> %.0f, failed requests %d",
		*b.Accuracy, *h.Accuracy, h.Extra["failed_instances"], h.Extra["lost_subrequests"], b.Extra["partial_answers"], h.Extra["partial_answers"], h.Failed)
	if h.Extra["failed_instances"] == 0 {
		t.Fatalf("no instance failed: the test injects nothing")
	}
	if d := *b.Accuracy - *h.Accuracy; d > 0.01 {
		t.Errorf("accuracy drop = %.4f - %.4f = %.4f, want ≤ 0.01", *b.Accuracy, *h.Accuracy, d)
	}
	if d := b.Extra["accuracy_all"] - h.Extra["accuracy_all"]; d > 0.01 {
		t.Errorf("accuracy over all requests drops by %.4f, want ≤ 0.01", d)
	}
	if h.Completed+h.Failed+h.Rejected != h.Requests || h.Requests != b.Requests {
		t.Errorf("accounting: requests %d (without failures %d) vs completed %d + failed %d + rejected %d",
			h.Requests, b.Requests, h.Completed, h.Failed, h.Rejected)
	}
	if h.Failed != 0 {
		t.Errorf("failed requests = %d, want 0: every request keeps at least one vote", h.Failed)
	}
}
