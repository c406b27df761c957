//go:build defaults

package experiment

import (
	"context"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/tune"
)

// checkDefaultsInBand re-chooses p's defaults with the generic tuner on the tuning halves of the
// two committed 30-minute Twitter excerpts (5 minutes each) and asserts that the committed
// defaults are in the search's band: they meet the SLO on every tuning part at a cost within
// DefaultsBand of the search's cheapest. A default moved to a dearer or a missing value fails.
func checkDefaultsInBand(t *testing.T, p DefaultsProblem) {
	t.Helper()
	excerpts := []string{"twitter-2017-05-25-0700-30min.rps.csv", "twitter-2017-05-25-2000-30min.rps.csv"}
	c := DefaultsConfig{Root: "../..", TraceDir: "../../testdata/traces", Duration: 5 * time.Minute, Cache: tune.NewCache("", "")}
	for i, sc := range p.Scopes {
		p.Scopes[i].Traces = excerpts[:min(len(sc.Traces), len(excerpts))]
	}
	ch, err := ChooseDefaults(context.Background(), c, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: committed %s → %+v; chosen %s → %+v (%d runs)", p.Name, p.Committed.Key(), ch.Committed, ch.Search.Options.Key(), ch.Search.Tuning, ch.Search.Runs)
	if !ch.Search.Met {
		t.Errorf("%s: no candidate met the SLO on the tuning parts", p.Name)
	}
	if !ch.InBand(ch.Target) {
		t.Errorf("%s: committed defaults %s (%+v) are not in the band of the search's answer %s (%+v)", p.Name, p.Committed.Key(), ch.Committed,
			ch.Search.Options.Key(), ch.Search.Tuning)
	}
}

// TestCommittedDefaultsInSearchBand is checkDefaultsInBand for every tuned default
// (DefaultsProblems): about a CPU-minute (sloserve's BATCH optimiser; ~10× under the race
// detector, which internal/experiment's make-test step uses), so it runs under
// `make test-defaults`, not `make test`.
func TestCommittedDefaultsInSearchBand(t *testing.T) {
	for _, p := range DefaultsProblems() {
		t.Run(p.Name, func(t *testing.T) { checkDefaultsInBand(t, p) })
	}
}
