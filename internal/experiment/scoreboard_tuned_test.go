package experiment

import (
	"context"
	"math"
	"testing"
	"time"
)

// headlineRows runs MArk's setting (docs/mark-sim.yaml, 600 ms at 98 %, Twitter peaks × 240 req/s)
// on the committed 30-minute Twitter excerpts: each tuned on the first 5 minutes of its first
// half, scored on the first 5 of its second, with the paper defaults and the oracle beside them.
func headlineRows(t *testing.T) map[string]map[string]ScoreEntry {
	t.Helper()
	es, notes, err := RunScoreboard(context.Background(), ScoreboardConfig{
		Root: "../..", TraceDirs: []string{"../../testdata/traces"}, Settings: DefaultScoreSettings()[1:2],
		Policies: []string{"mark", "sloserve", "sagemaker-ec2-tuned", "lambda-tuned", "fixed-tuned"}, Duration: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Fatalf("notes: %v", notes)
	}
	rows := map[string]map[string]ScoreEntry{}
	for _, e := range es {
		if rows[e.Trace] == nil {
			rows[e.Trace] = map[string]ScoreEntry{}
		}
		rows[e.Trace][e.Policy] = e
		t.Logf("%s %-20s %.2f %% $%.4f ×%.3f oracle tuned %+v", e.Trace, e.Policy, 100*e.SLOAttainment, e.CostUSD.Total, e.CostVsOracle, e.Tuned)
	}
	if len(rows) != 2 {
		t.Fatalf("traces: %d, want the 2 committed excerpts", len(rows))
	}
	return rows
}

// TestScoreboardTunedHeadlines asserts the fair comparison of issue #17 on MArk's setting as
// bands: target tracking tuned on the tuning part (EC2 prices) against MArk, and sloserve
// against the cheapest tuned baseline meeting the SLO; every row carries split evaluation, every
// tuned row met the SLO on its tuning part, and the oracle is a floor under every policy: its
// row has cost_vs_oracle 1 and is never the cheapest, and mark's cost_vs_oracle lies in a band.
func TestScoreboardTunedHeadlines(t *testing.T) {
	for tr, r := range headlineRows(t) {
		checkOracleRow(t, tr, r)
		mark, sm, me, or := r["mark"], r["sagemaker-ec2-tuned"], r["sloserve"], r[OraclePolicy]
		for _, name := range []string{"mark", "sloserve", "sagemaker-ec2-tuned", OraclePolicy} {
			if _, ok := r[name]; !ok {
				t.Fatalf("%s: no %s row", tr, name)
			}
		}
		for p, e := range r {
			if e.Split != "evaluation" {
				t.Errorf("%s / %s: split %q, want evaluation", tr, p, e.Split)
			}
			if e.Tuned != nil && !e.Tuned.Met {
				t.Errorf("%s / %s: no candidate met the SLO on the tuning part (%+v)", tr, p, e.Tuned)
			}
			if p != OraclePolicy && e.CostUSD.Total < or.CostUSD.Total {
				t.Errorf("%s / %s: $%.4f below the oracle's floor $%.4f", tr, p, e.CostUSD.Total, or.CostUSD.Total)
			}
		}
		// MArk against target tracking tuned as an operator would (EC2 prices): the 2.47× against
		// the paper's baseline shrinks to 1.04–1.12× here.
		if ratio := sm.CostUSD.Total / mark.CostUSD.Total; !mark.MetSLO || !sm.MetSLO || !(ratio >= 0.95 && ratio <= 1.6) {
			t.Errorf("%s: tuned target tracking / mark = %.3f (met %v, %v), want in [0.95, 1.6]", tr, ratio, mark.MetSLO, sm.MetSLO)
		}
		best := math.Inf(1)
		for _, e := range r {
			if e.Tuned != nil && e.MetSLO {
				best = math.Min(best, e.CostUSD.Total)
			}
		}
		if ratio := me.CostUSD.Total / best; !me.MetSLO || ratio > 1.0001 {
			t.Errorf("%s: sloserve / best tuned baseline = %.3f (met %v), want ≤ 1 at SLO", tr, ratio, me.MetSLO)
		}
	}
}

// checkOracleRow: the oracle row has cost_vs_oracle 1, is never marked cheapest, and mark's
// cost_vs_oracle on MArk's setting lies in a band.
func checkOracleRow(t *testing.T, tr string, r map[string]ScoreEntry) {
	t.Helper()
	{
		or, mark := r[OraclePolicy], r["mark"]
		if or.CostVsOracle != 1 || or.Cheapest || !(or.CostUSD.Total > 0) {
			t.Errorf("%s: oracle row %+v, want cost_vs_oracle 1, positive cost, not cheapest", tr, or)
		}
		// On MArk's setting Lambda with batches of up to 32 is far cheaper than any VM: the floor
		// is mostly serverless, so VM-only mark sits at 23–25× it, sloserve (all serverless at
		// B ≈ 32 from the first second, its buffer seeded from the offline mean rate) at
		// 1.03× (issue #17's goal: ≤ 1.1×; 6.8–7.1× while its first minute ran vanilla Lambda).
		if !(mark.CostVsOracle >= 15 && mark.CostVsOracle <= 35) {
			t.Errorf("%s: mark at %.3f× the oracle, want in [15, 35]", tr, mark.CostVsOracle)
		}
		if me := r["sloserve"]; !(me.CostVsOracle >= 1 && me.CostVsOracle <= 1.1) {
			t.Errorf("%s: sloserve at %.3f× the oracle, want in [1, 1.1]", tr, me.CostVsOracle)
		}
	}
}
