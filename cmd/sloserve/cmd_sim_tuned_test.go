package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/slo"
)

// TestSimPolicyAllTuned: `sim --trace T --policy all --json` carries the tuned baselines
// (tuned on the first half of T) beside the registered policies; a NAME-tuned alone runs that
// one; --tuning without a tuned baseline, an unknown -tuned name and --tune-prefix given without
// --scoreboard (even at its default) or below 0 are usage errors (exit 2).
func TestSimPolicyAllTuned(t *testing.T) {
	tr := "../../testdata/traces/twitter-2017-05-25-0700-30min.rps.csv"
	var out, errOut bytes.Buffer
	args := []string{"--trace", tr, "--duration", "4m", "--policy", "all", "--json", "--no-cache"}
	if err := runSim(context.Background(), args, env{stdout: &out, stderr: &errOut}); err != nil {
		t.Fatalf("sim %v: %v\n%s", args, err, errOut.String())
	}
	var sums []slo.Summary
	if err := json.Unmarshal(out.Bytes(), &sums); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range sums {
		got[s.Policy] = true
	}
	for _, want := range append([]string{"sloserve", "sagemaker"}, tunedNames()...) {
		if !got[want] {
			t.Errorf("--policy all: no %s row (got %v; stderr %s)", want, got, errOut.String())
		}
	}
	out.Reset()
	args = []string{"--trace", tr, "--duration", "2m", "--policy", "lambda-tuned", "--json", "--no-cache"}
	if err := runSim(context.Background(), args, env{stdout: &out, stderr: &errOut}); err != nil {
		t.Fatalf("sim %v: %v", args, err)
	}
	var one slo.Summary
	if err := json.Unmarshal(out.Bytes(), &one); err != nil || one.Policy != "lambda-tuned" {
		t.Errorf("--policy lambda-tuned: %+v, %v; want one lambda-tuned Summary", one.Policy, err)
	}
	for _, bad := range [][]string{
		{"--trace", tr, "--policy", "mark", "--tuning", tr},
		{"--trace", tr, "--policy", "bogus-tuned"},
		{"--scoreboard", "--tuning", tr},
		{"--scoreboard", "--settings", "bogus"},
		{"--trace", tr, "--tune-prefix", "12h"},
		{"--scoreboard", "--tune-prefix", "-1h"},
	} {
		err := runSim(context.Background(), bad, env{stdout: &out, stderr: &errOut})
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: error %v, want a usage error naming the flag", bad, err)
		}
	}
}
