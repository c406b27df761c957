package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/profile"
)

func TestProfileAndTrainUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"profile without model", []string{"profile"}},
		{"profile unknown model", []string{"profile", "--model", "resnet"}},
		{"profile bad runtime", []string{"profile", "--model", "logreg", "--runtime", "tpu"}},
		{"profile zero batch", []string{"profile", "--model", "logreg", "--batches", "1,0"}},
		{"profile operators on onnxruntime", []string{"profile", "--model", "logreg", "--runtime", "onnxruntime", "--operators"}},
		{"train negative epochs", []string{"train", "--epochs", "-1"}},
		{"train unknown model", []string{"train", "--models", "resnet"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, nil, &out, &errOut)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("run(%v) error = %v, want a usage error (exit status 2)", tc.args, err)
			}
		})
	}
}

func TestProfileJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"profile", "--model", "logreg", "--batches", "1,4", "--min-runs", "2", "--max-runs", "2", "--min-time", "0s", "--operators", "--json"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v\n%s", args, err, errOut.String())
	}
	var p profileEntry
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("profile --json output does not parse: %v\n%s", err, out.String())
	}
	if len(p.Points) != 2 || p.Points[0].Batch != 1 || p.Points[1].Batch != 4 || p.Points[0].P50MS <= 0 {
		t.Errorf("points = %+v, want batch 1 and 4 with positive times", p.Points)
	}
	if _, err := profile.ReadWorkerProfile(bytes.NewReader(out.Bytes())); err != nil {
		t.Errorf("internal/profile cannot read profile --json: %v", err)
	}
	if len(p.Operators) != 2 || len(p.Operators[0].Nodes) == 0 {
		t.Errorf("operators = %+v, want per-node times for both batch sizes", p.Operators)
	}
}

// TestProfileStoreFlags: the operator store's flags are checked before anything is measured, and
// --loo-from prints the committed snapshot's leave-one-out errors.
func TestProfileStoreFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--store", "/tmp/x.json"},
		{"--loo"},
		{"--operators", "--store", "/tmp/x.json", "--thread-counts", "0"},
		{"--operators", "--store", "/tmp/x.json", "--rounds", "0"},
		{"--store", "/tmp/x.json", "--loo-from", "y.json"},
		{"--loo-from", "does-not-exist.json"},
	} {
		var out, errOut bytes.Buffer
		err := runProfile(context.Background(), args, env{stdout: &out, stderr: &errOut})
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
	var out, errOut bytes.Buffer
	if err := runProfile(context.Background(), []string{"--loo-from", "../../internal/profile/testdata/opstore.json"}, env{stdout: &out, stderr: &errOut}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "batch 8   threads 2") {
		t.Errorf("--loo-from output lacks the batch 8, 2 threads mean:\n%s", out.String())
	}
}
