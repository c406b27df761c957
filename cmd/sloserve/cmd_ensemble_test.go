package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
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
		{"eval target above one", runEnsemble, []string{"eval", "--target-accuracy", "1.5"}},
		{"eval unknown flag", runEnsemble, []string{"eval", "--nope"}},
		{"sim missing table", runEnsemble, []string{"sim", "--table", "testdata/does-not-exist.csv"}},
		{"sim correlation one", runEnsemble, []string{"sim", "--correlation", "1"}},
		{"sim zero requests", runEnsemble, []string{"sim", "--requests", "0"}},
		{"keepalive without subcommand", runKeepalive, nil},
		{"keepalive missing trace", runKeepalive, []string{"replay", "--trace", "testdata/does-not-exist.csv"}},
		{"keepalive zero step", runKeepalive, []string{"replay", "--step", "0s"}},
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

func TestEnsembleEvalJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"ensemble", "eval", "--passes", "2", "--latency-runs", "3", "--json"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v\n%s", args, err, errOut.String())
	}
	var rep struct {
		Single []struct {
			Model     string  `json:"model"`
			Accuracy  float64 `json:"accuracy"`
			LatencyMS float64 `json:"latency_ms"`
		} `json:"single"`
		Full, Static, Dynamic struct {
			Accuracy   *float64 `json:"accuracy"`
			MeanModels *float64 `json:"mean_models"`
			LatencyMS  *float64 `json:"latency_ms"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if len(rep.Single) < 2 {
		t.Fatalf("want every bundled model in single, got %d", len(rep.Single))
	}
	for _, e := range []struct {
		name string
		a, m *float64
	}{{"full", rep.Full.Accuracy, rep.Full.MeanModels}, {"static", rep.Static.Accuracy, rep.Static.MeanModels}, {"dynamic", rep.Dynamic.Accuracy, rep.Dynamic.MeanModels}} {
		if e.a == nil || e.m == nil || *e.a <= 0.5 || *e.m < 1 {
			t.Errorf("%s: accuracy %v mean models %v", e.name, e.a, e.m)
		}
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
