package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestEnsembleAndKeepaliveUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(ctx context.Context, args []string, e env) error
		args []string
	}{
		{"ensemble without subcommand", runEnsemble, nil},
		{"ensemble unknown subcommand", runEnsemble, []string{"vote"}},
		{"eval bad runtime", runEnsemble, []string{"eval", "--runtime", "tpu"}},
		{"eval unknown baseline", runEnsemble, []string{"eval", "--baseline", "resnet"}},
		{"eval zero passes", runEnsemble, []string{"eval", "--passes", "0"}},
		{"eval early exit of one", runEnsemble, []string{"eval", "--early-exit", "1"}},
		{"eval target above one", runEnsemble, []string{"eval", "--target-accuracy", "1.5"}},
		{"eval unknown flag", runEnsemble, []string{"eval", "--nope"}},
		{"sim missing table", runEnsemble, []string{"sim", "--table", "testdata/does-not-exist.csv"}},
		{"sim correlation one", runEnsemble, []string{"sim", "--correlation", "1"}},
		{"sim zero requests", runEnsemble, []string{"sim", "--requests", "0"}},
		{"keepalive without subcommand", runKeepalive, nil},
		{"keepalive missing trace", runKeepalive, []string{"replay", "--trace", "testdata/does-not-exist.csv"}},
		{"keepalive zero step", runKeepalive, []string{"replay", "--step", "0s"}},
		// Ten steps of 114 years overflow a time.Duration (292 years).
		{"keepalive step overflows", runKeepalive, []string{"replay", "--trace", "../../internal/keepalive/testdata/fn-excerpt.rpm.csv", "--step", "1000000h"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := tc.run(context.Background(), tc.args, env{stdout: &out, stderr: &errOut})
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("%v: error = %v, want a usage error (exit status 2)", tc.args, err)
			}
		})
	}
}

// TestEnsembleEvalJSON runs `ensemble eval --json` over the bundled models and images. It uses
// ONNX Runtime when make test provides it: the native interpreter's loops, 13 models × 3,000
// images, took 200 s under the race detector on the shared 2-core machine (ONNX Runtime is not
// instrumented); the native runtime's arithmetic has its own tests in internal/models.
func TestEnsembleEvalJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"ensemble", "eval", "--passes", "2", "--latency-runs", "3", "--json"}
	if lib := os.Getenv("ONNXRUNTIME_LIB"); lib != "" {
		if _, err := os.Stat(lib); err == nil {
			args = append(args, "--runtime", "onnxruntime")
		}
	}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v\n%s", args, err, errOut.String())
	}
	var rep struct {
		Batch  int `json:"batch"`
		Single []struct {
			Model          string  `json:"model"`
			Accuracy       float64 `json:"accuracy"`
			LatencyMS      float64 `json:"latency_ms"`
			BatchLatencyMS float64 `json:"batch_latency_ms"`
		} `json:"single"`
		Ensembles []struct {
			Name  string `json:"name"`
			Votes []struct {
				Voting     string   `json:"voting"`
				Accuracy   *float64 `json:"accuracy"`
				MeanModels *float64 `json:"mean_models"`
				LatencyMS  *float64 `json:"latency_ms"`
			} `json:"votes"`
		} `json:"ensembles"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if len(rep.Single) < 2 || rep.Batch != 8 || rep.Single[0].BatchLatencyMS <= 0 {
		t.Fatalf("want every bundled model in single with a batch-8 latency, got batch %d, %+v", rep.Batch, rep.Single)
	}
	var names []string
	for _, e := range rep.Ensembles {
		names = append(names, e.Name)
		if len(e.Votes) != 4 {
			t.Errorf("%s: %d voting schemes, want 4 (the bundled models give probabilities)", e.Name, len(e.Votes))
		}
		for _, v := range e.Votes {
			if v.Accuracy == nil || v.MeanModels == nil || v.LatencyMS == nil || *v.Accuracy <= 0.5 || *v.MeanModels < 1 {
				t.Errorf("%s %s: accuracy %v mean models %v latency %v", e.Name, v.Voting, v.Accuracy, v.MeanModels, v.LatencyMS)
			}
		}
	}
	if got := strings.Join(names, ","); got != "full,static,dynamic,early-exit-exact,early-exit,select,dynamic-select" {
		t.Errorf("ensembles (-want +got):\n-full,static,dynamic,early-exit-exact,early-exit,select,dynamic-select\n+%s", got)
	}
}

func TestKeepaliveReplayJSON(t *testing.T) {
	const trace = "../../internal/keepalive/testdata/fn-excerpt.rpm.csv"
	if _, err := os.Stat(trace); err != nil {
		t.Skip(err)
	}
	var out, errOut bytes.Buffer
	if err := runKeepalive(context.Background(), []string{"replay", "--trace", trace, "--json"}, env{stdout: &out, stderr: &errOut}); err != nil {
		t.Fatal(err)
	}
	var rs []struct {
		Trace      string `json:"trace"`
		Policy     string `json:"policy"`
		ColdStarts int    `json:"cold_starts"`
	}
	want := map[string]bool{"fixed-10m": true, "hhp": true, "lsth": true}
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("decode replay JSON: %v\n%s", err, out.String())
	}
	for _, r := range rs {
		delete(want, r.Policy)
	}
	if len(want) > 0 {
		t.Fatalf("replay JSON lacks policies %v\n%s", want, out.String())
	}
}
