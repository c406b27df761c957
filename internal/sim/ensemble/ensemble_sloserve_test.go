package ensemble

import (
	"testing"
)

// TestSloserveCocktailSetting is issue 11's acceptance on Cocktail's benchmark (first 20 minutes
// of the Twitter trace at 50 req/s, or the hour with SLOSERVE_LONG): sloserve costs no more than
// cocktail and meets the accuracy target for at least as many requests. Skips without
// ../shared/data.
func TestSloserveCocktailSetting(t *testing.T) {
	data, tr := cocktailSetup(t, acceptanceDuration())
	cfg := DefaultEnsembleConfig()
	s, c := runCocktail(t, data, tr, "sloserve", cfg).Summary, runCocktail(t, data, tr, "cocktail", cfg).Summary
	t.Logf("sloserve $%.3f target met %.4f; cocktail $%.3f target met %.4f", s.CostUSD.Total, s.Extra["accuracy_target_met_fraction"], c.CostUSD.Total, c.Extra["accuracy_target_met_fraction"])
	if s.CostUSD.Total > c.CostUSD.Total {
		t.Errorf("sloserve $%.3f > cocktail $%.3f", s.CostUSD.Total, c.CostUSD.Total)
	}
	if s.Extra["accuracy_target_met_fraction"] < c.Extra["accuracy_target_met_fraction"] {
		t.Errorf("sloserve meets the accuracy target for %.4f of requests, cocktail %.4f", s.Extra["accuracy_target_met_fraction"], c.Extra["accuracy_target_met_fraction"])
	}
	if s.SLOAttainment < c.SLOAttainment-0.001 {
		t.Errorf("sloserve latency SLO %.4f, cocktail %.4f", s.SLOAttainment, c.SLOAttainment)
	}
}
