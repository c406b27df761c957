package keepalive

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// azureTraces are the six Azure Functions per-minute traces INFless evaluates on.
const azureTraces = "../../../shared/data/traces/azure-functions/fn*.rpm.csv"

// TestAzureReplay replays every baseline over the Azure Functions traces and logs cold starts
// and idle instance-minutes per trace (go test -run TestAzureReplay -v ./internal/keepalive;
// docs/keepalive.md has the table). It checks INFless §3.5's claim, summed over the traces:
// LSTH (γ = 0.5) has fewer cold starts than HHP and less idle instance-time (per trace it does
// not hold on every trace: docs/keepalive.md), and that HHP, summed, cuts cold starts against
// the fixed keep-alive; and against HHP with the same linger (hhp-linger), LSTH has 1.3–2× the
// cold starts and 90–100 % of the idle time (checkFairLSTH).
func TestAzureReplay(t *testing.T) {
	files, _ := filepath.Glob(azureTraces)
	if len(files) == 0 {
		t.Skip("shared Azure traces absent: run from a checkout next to ../shared/data")
	}
	total := map[string]Result{}
	var names []string
	for _, b := range Baselines() {
		names = append(names, b.Name)
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := ReadCounts(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range Compare(counts, time.Minute, Baselines()) {
			t.Logf("%-12s %-13s invocations %6d cold %4d (%.4f) idle %7.0f min", filepath.Base(f), r.Policy, r.Invocations, r.ColdStarts, r.ColdStartRate, r.IdleMinutes)
			s := total[r.Policy]
			s.ColdStarts += r.ColdStarts
			s.IdleMinutes += r.IdleMinutes
			total[r.Policy] = s
		}
	}
	for _, p := range names {
		t.Logf("%-12s %-13s cold %4d idle %7.0f min", "all", p, total[p].ColdStarts, total[p].IdleMinutes)
	}
	if total["hhp"].ColdStarts >= total["fixed-10m"].ColdStarts {
		t.Errorf("HHP cold starts %d >= fixed %d", total["hhp"].ColdStarts, total["fixed-10m"].ColdStarts)
	}
	checkFairLSTH(t, total, 1.3, 2, 0.9, 1) // 116 vs 71, 27,023 vs 28,523 minutes
	lsth, hhp := total["lsth"], total["hhp"]
	if lsth.ColdStarts >= hhp.ColdStarts || lsth.IdleMinutes >= hhp.IdleMinutes {
		t.Errorf("LSTH does not beat HHP on both counts: cold %d vs %d, idle %.0f vs %.0f min",
			lsth.ColdStarts, hhp.ColdStarts, lsth.IdleMinutes, hhp.IdleMinutes)
	}
}
