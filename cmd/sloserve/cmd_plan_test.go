package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
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

// TestPlanBatchValidate: --validate replays the plan through the buffer simulator with the
// --service-cv noise, and what it measures agrees with what the plan predicts.
func TestPlanBatchValidate(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"plan", "batch", "--rate", "50", "--slo-ms", "5000", "--service-cv", "0.05", "--memory-min-mb", "3008",
		"--validate", "--json"}
	if err := run(context.Background(), args, nil, &out, &errOut); err != nil {
		t.Fatalf("run(%v): %v", args, err)
	}
	var got struct {
		LatencyMS  float64 `json:"predicted_latency_ms"`
		Attainment float64 `json:"predicted_attainment"`
		Validation *struct {
			Requests  int     `json:"requests"`
			LatencyMS float64 `json:"latency_ms"`
			WithinSLO float64 `json:"within_slo"`
			ServiceCV float64 `json:"service_cv"`
		} `json:"validation"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	v := got.Validation
	if v == nil {
		t.Fatalf("no validation in %s", out.String())
	}
	t.Logf("predicted P95 %.1f ms within %.4f; replayed %d requests: P95 %.1f ms within %.4f", got.LatencyMS, got.Attainment,
		v.Requests, v.LatencyMS, v.WithinSLO)
	if v.Requests < 100000 || v.ServiceCV != 0.05 || v.WithinSLO < 0.95 || math.Abs(v.WithinSLO-got.Attainment) > 0.01 ||
		math.Abs(v.LatencyMS-got.LatencyMS) > 0.01*got.LatencyMS {
		t.Errorf("validation %+v disagrees with the plan's prediction (P95 %.1f ms, within %.4f)", *v, got.LatencyMS, got.Attainment)
	}
}
