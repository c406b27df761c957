package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
)

func TestPlanBatchUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no planner", []string{"plan"}},
		{"unknown planner", []string{"plan", "mark"}},
		{"no arrivals", []string{"plan", "batch", "--slo-ms", "3000"}},
		{"two arrival sources", []string{"plan", "batch", "--rate", "5", "--trace", "x", "--slo-ms", "3000"}},
		{"zero rate", []string{"plan", "batch", "--rate", "0", "--slo-ms", "3000"}},
		{"no objective", []string{"plan", "batch", "--rate", "5"}},
		{"negative slo", []string{"plan", "batch", "--rate", "5", "--slo-ms", "-1"}},
		{"bad percentile", []string{"plan", "batch", "--rate", "5", "--slo-ms", "3000", "--percentile", "100"}},
		{"bad budget", []string{"plan", "batch", "--rate", "5", "--budget", "0"}},
		{"missing trace", []string{"plan", "batch", "--trace", "testdata/none", "--slo-ms", "3000"}},
		{"map needs two files", []string{"plan", "batch", "--map", "onlyone", "--slo-ms", "3000"}},
		{"unknown model", []string{"plan", "batch", "--rate", "5", "--slo-ms", "3000", "--model", "vgg"}},
		{"grid outside the profile", []string{"plan", "batch", "--rate", "5", "--slo-ms", "3000", "--memory-max-mb", "1024"}},
		{"bad grid", []string{"plan", "batch", "--rate", "5", "--slo-ms", "3000", "--memory-step-mb", "0"}},
		{"unknown flag", []string{"plan", "batch", "--rate", "5", "--slo-ms", "3000", "--nope"}},
		{"negative service cv", []string{"plan", "batch", "--rate", "5", "--slo-ms", "3000", "--service-cv", "-0.1"}},
		{"service cv with a budget", []string{"plan", "batch", "--rate", "5", "--budget", "1e-4", "--service-cv", "0.05"}},
	} {
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

func TestPlanBatchJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"plan", "batch", "--rate", "35", "--slo-ms", "3000", "--percentile", "0.95",
		"--max-batch", "6", "--timeout-step-ms", "50", "--memory-step-mb", "256", "--json"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v", args, err)
	}
	var got struct {
		MemoryMB  int     `json:"memory_mb"`
		MaxBatch  int     `json:"max_batch"`
		TimeoutMS float64 `json:"timeout_ms"`
		LatencyMS float64 `json:"predicted_latency_ms"`
		Cost      float64 `json:"cost_per_request_usd"`
		Feasible  bool    `json:"feasible"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if !got.Feasible || got.LatencyMS > 3000 || got.MaxBatch < 1 || got.MemoryMB < 1280 || got.MemoryMB > 3008 || !(got.Cost > 0) {
		t.Errorf("plan: %+v", got)
	}
}
