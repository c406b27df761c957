package sim

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestScoreboardSample runs three policies on the committed sample traces for five minutes in
// sloserve's default setting: one entry per (trace, policy), sagemaker's ratio 1, a verdict per
// trace, and sloserve meeting the SLO.
func TestScoreboardSample(t *testing.T) {
	t.Parallel() // long and independent: lets the package's tests use both cores
	es, notes, err := RunScoreboard(context.Background(), ScoreboardConfig{
		Root: "../..", TraceDirs: []string{"../../testdata/traces"}, Settings: DefaultScoreSettings()[:1],
		Policies: []string{"sagemaker", "mark", "sloserve"}, Duration: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes: %v, want none", notes)
	}
	if len(es) != 6 {
		t.Fatalf("entries: got %d, want 2 traces × 3 policies", len(es))
	}
	for _, e := range es {
		if e.Setting != "default" || e.Trace == "" || !strings.HasSuffix(e.Trace, ".csv") {
			t.Errorf("entry %s/%s/%s: want setting default and the trace's file name", e.Setting, e.Trace, e.Policy)
		}
		if e.Policy == "sagemaker" && e.CostVsSageMaker != 1 {
			t.Errorf("sagemaker's ratio to itself: got %v, want 1", e.CostVsSageMaker)
		}
		if e.Policy == "sloserve" && !e.MetSLO {
			t.Errorf("sloserve on %s: attainment %.4f below the target", e.Trace, e.SLOAttainment)
		}
	}
	if v := ScoreVerdict(es); len(v) != 2 {
		t.Errorf("verdicts: got %q, want one per trace", v)
	}
	var buf bytes.Buffer
	if err := WriteScoreTable(&buf, es); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 8 {
		t.Errorf("table: %d lines, want header + separator + 6:\n%s", n, buf.String())
	}
}

// TestScoreboardFull is the docs/scoreboard.md table: every policy, every setting, every trace
// under testdata/traces and ../shared/data/traces, 6 hours each (several minutes of CPU).
// SLOSERVE_SCOREBOARD=1 runs it.
func TestScoreboardFull(t *testing.T) {
	if os.Getenv("SLOSERVE_SCOREBOARD") == "" {
		t.Skip("set SLOSERVE_SCOREBOARD=1 to run the full scoreboard (several minutes)")
	}
	if _, err := os.Stat("../../../shared/data/traces"); err != nil {
		t.Skipf("../shared/data/traces is absent: %v", err)
	}
	es, notes, err := RunScoreboard(context.Background(), ScoreboardConfig{Root: "../..",
		TraceDirs: []string{"../../testdata/traces", "../../../shared/data/traces"}, Duration: 6 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteScoreTable(&buf, es); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	for _, v := range ScoreVerdict(es) {
		t.Log(v)
	}
	for _, n := range notes {
		t.Log("skipped: ", n)
	}
}
