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
// docs/keepalive.md has the table). It checks what holds on every trace: the histogram policies
// cut cold starts against the fixed keep-alive, and LSTH, summed over the traces, idles less
// than HHP (it does not also have fewer cold starts: see docs/keepalive.md).
func TestAzureReplay(t *testing.T) {
	files, _ := filepath.Glob(azureTraces)
	if len(files) == 0 {
		t.Skip("shared Azure traces absent: run from a checkout next to ../shared/data")
	}
	total := map[string]Result{}
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
			t.Logf("%-12s %-9s invocations %6d cold %4d (%.4f) idle %7.0f min", filepath.Base(f), r.Policy, r.Invocations, r.ColdStarts, r.ColdStartRate, r.IdleMinutes)
			s := total[r.Policy]
			s.ColdStarts += r.ColdStarts
			s.IdleMinutes += r.IdleMinutes
			total[r.Policy] = s
		}
	}
	for _, p := range []string{"fixed-10m", "hhp", "hhp-4h", "lsth", "lsth-g0.3", "lsth-g0.7"} {
		t.Logf("%-12s %-9s cold %4d idle %7.0f min", "all", p, total[p].ColdStarts, total[p].IdleMinutes)
	}
	if total["lsth"].IdleMinutes >= total["hhp"].IdleMinutes {
		t.Errorf("LSTH idle %.0f min >= HHP %.0f min", total["lsth"].IdleMinutes, total["hhp"].IdleMinutes)
	}
	if total["hhp"].ColdStarts >= total["fixed-10m"].ColdStarts {
		t.Errorf("HHP cold starts %d >= fixed %d", total["hhp"].ColdStarts, total["fixed-10m"].ColdStarts)
	}
}
