package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExperimentCommand: 'experiment list' names every experiment; an unknown experiment, a bad
// flag and a bad peak exit 2 naming what was wrong; a quick run prints its table.
func TestExperimentCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"experiment", "list"}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scoreboard", "mark-breakdown", "batch-twitter-day"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("experiment list lacks %s:\n%s", name, out.String())
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"experiment", "nope"}, `unknown experiment "nope"`},
		{[]string{"experiment"}, "want 'list' or an experiment name"},
		{[]string{"experiment", "scoreboard", "--bogus"}, "-bogus"},
		{[]string{"experiment", "scoreboard", "--peaks", "x"}, `--peaks: bad peak "x"`},
		{[]string{"experiment", "scoreboard", "--duration", "-1s"}, "--duration"},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), tc.args, strings.NewReader(""), &bytes.Buffer{}, &stderr)
		if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("run(%q): exit %d, stderr %q; want 2 naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestExperimentScoreboardRuns runs the scoreboard experiment from the command for one minute of
// the committed traces with two policies and no shared data: it prints the table and verdicts.
// The two are the cheap baselines, not sloserve: sloserve's construction runs BATCH's optimiser,
// which made this wiring test 8 minutes under the race detector; the verdict line for a setting
// sloserve did not run in is still printed.
func TestExperimentScoreboardRuns(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"experiment", "scoreboard", "--root", "../..", "--data", t.TempDir(), "--duration", "1m", "--policies", "sagemaker,fixed", "--quiet"}
	if err := run(context.Background(), args, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "| setting") || !strings.Contains(s, "default / twitter-2017-05-25-0700-30min.rps.csv: sloserve did not run") {
		t.Errorf("output lacks the table or the verdict:\n%s", s)
	}
}
