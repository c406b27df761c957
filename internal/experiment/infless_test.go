package experiment

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixture is the committed stand-in for the shared data (testdata/fixture/README.md).
const fixture = "../../testdata/fixture"

// fixtureINFless returns the fixture's made-up INFless profiles and burst traces.
func fixtureINFless() (profiles string, traces []string) {
	for _, f := range []string{"burst300-2.csv", "burst300-3.csv", "burst300-4.csv"} {
		traces = append(traces, filepath.Join(fixture, "traces", "azure-functions", f))
	}
	return filepath.Join(fixture, "profiles", "infless"), traces
}

// TestInflessTableBeatsUniform is the claim of docs/infless.md's tables on the fixture's made-up
// profiles and traces (10 minutes, 100 rps peaks): INFless serves more requests per unit of resource than the
// BATCH-style uniform baseline, and meets every function's 95 % SLO target.
func TestInflessTableBeatsUniform(t *testing.T) {
	profiles, traces := fixtureINFless()
	runs, err := InflessTable(context.Background(), profiles, traces, []string{"infless"}, "made-up", 100, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeInflessTable(&b, "made-up", runs)
	t.Logf("\n%s", b.String())
	if len(runs) != 2 || runs[0].Name != "infless" || runs[1].Name != "uniform" {
		t.Fatalf("runs %v, want infless and uniform", runs)
	}
	inf, uni := runs[0].Summary.Extra["rps_per_resource"], runs[1].Summary.Extra["rps_per_resource"]
	if inf <= uni {
		t.Errorf("infless %.4f rps/resource, uniform %.4f: want infless higher", inf, uni)
	}
	for _, f := range runs[0].Functions {
		if f.SLOAttainment < 0.95 {
			t.Errorf("infless: function on %s attains %.4f < 0.95", f.Trace, f.SLOAttainment)
		}
	}
}

// TestInflessLoadRowsAndRatios: the busy-cluster experiment on the fixture at one peak runs
// uniform and openfaas+ as the ratios' bases beside the policy asked for, and prints their rows.
func TestInflessLoadRowsAndRatios(t *testing.T) {
	profiles, traces := fixtureINFless()
	runs, err := InflessLoad(context.Background(), profiles, traces, "made-up", 0, 5*time.Minute, 200, loadVariants([]string{"infless"}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeLoadTable(&b, runs)
	out := b.String()
	t.Logf("\n%s", out)
	for _, want := range []string{"| infless |", "| uniform |", "| openfaas+ |", "1.00× |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if inf, uni := runs[0].Summary.Extra["rps_per_resource"], runs[1].Summary.Extra["rps_per_resource"]; inf <= uni {
		t.Errorf("infless %.4f rps/resource, uniform %.4f: want infless higher", inf, uni)
	}
}
