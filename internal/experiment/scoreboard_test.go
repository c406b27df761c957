package experiment

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestScoreboardSample runs three policies on the committed sample traces for five minutes in
// sloserve's default setting: one entry per (trace, policy), sagemaker's ratio 1, a verdict per
// trace, and sloserve meeting the SLO.
func TestScoreboardSample(t *testing.T) {
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

// TestScoreboardExperiment: `sloserve experiment scoreboard` over the committed traces alone
// (no shared data), two minutes, three policies: the table has every (setting, trace, policy) that
// could run, sagemaker's ratio is 1, one verdict per trace and setting, and sloserve meets the SLO
// in sloserve's default setting.
func TestScoreboardExperiment(t *testing.T) {
	e, err := Lookup("scoreboard")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o := Options{Root: "../..", Data: t.TempDir(), Duration: 2 * time.Minute, Policies: []string{"sagemaker", "mark", "sloserve"}}
	if err := e.Run(context.Background(), o, &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"| setting", "| default | twitter-2017-05-25-0700-30min.rps.csv | sagemaker", "1.000 ",
		"default / twitter-2017-05-25-0700-30min.rps.csv: sloserve meets the SLO", "default / twitter-2017-05-25-2000-30min.rps.csv: sloserve meets the SLO"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
