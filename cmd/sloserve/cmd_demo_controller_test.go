package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/slo"
)

// TestMain lets the test binary act as the sloserve binary: the demo's local provider runs
// os.Executable() as `worker`, so with SLOSERVE_TEST_AS_MAIN=1 the test binary serves as a real
// worker process.
func TestMain(m *testing.M) {
	if os.Getenv("SLOSERVE_TEST_AS_MAIN") == "1" {
		// As main does: SIGTERM and SIGINT end the command gracefully.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(exitCode(err, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestDemoControllerScalesUpAndDown runs `sloserve demo --controller mark` with real worker
// processes (bounded: 30 s of load): the controller must scale up for the burst and back down
// after it, and keep the SLO.
func TestDemoControllerScalesUpAndDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and drives 30 s of load")
	}
	s := runDemoController(t, "mark", 30*time.Second, 55*time.Second)
	peak, end := s.Extra["instances_peak"], s.Extra["instances_end"]
	t.Logf("attainment %.4f, instances peak %.0f end %.0f, cost $%.6f, %d requests, latency %+v, extra %v", s.SLOAttainment, peak, end, s.CostUSD.Total, s.Requests, s.LatencyMS, s.Extra)
	if peak < 3 {
		t.Errorf("instances_peak = %.0f, want ≥ 3 for a burst of 300 rps on workers of 100 rps", peak)
	}
	if end >= peak {
		t.Errorf("instances_end = %.0f, want below the peak %.0f after the burst", end, peak)
	}
	// On a quiet machine the demo keeps 0.98–1.0; on this shared 2-core machine (load average
	// 8–13 from other jobs) CPU contention, not capacity, costs a few percent, so the test only
	// guards against a controller that breaks serving. Under the race detector, with make test's
	// other packages running beside it, the race-instrumented workers and gateway run several
	// times slower and the figure is a draw: two runs side by side measured 0.33 and 0.84 with
	// the previous gateway and 0.76 and 0.91 with this one; the scaling above still holds, and
	// the attainment is checked without -race (and by make attack's overload rows).
	switch {
	case raceEnabled:
		t.Logf("race detector on: slo_attainment %.4f not checked", s.SLOAttainment)
	case s.SLOAttainment < 0.8:
		t.Errorf("slo_attainment = %.4f, want ≥ 0.8 (≥ 0.98 on a quiet machine)", s.SLOAttainment)
	}
	if !(s.CostUSD.Total > 0) || s.InstanceHours["local"] <= 0 {
		t.Errorf("cost_usd = %+v, instance_hours = %v; want both filled", s.CostUSD, s.InstanceHours)
	}
}

// TestDemoControllerINFless runs `sloserve demo --controller infless` with real worker processes
// (bounded: 20 s of load): INFless live — the simulator's INFless policy over the local provider's
// two demo servers — must place instances for the burst (Alg. 1), release them once the α-band's
// case (iii) has held for the cool-down, and keep serving.
func TestDemoControllerINFless(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and drives 20 s of load")
	}
	s := runDemoController(t, "infless", 20*time.Second, 50*time.Second)
	peak, end := s.Extra["instances_peak"], s.Extra["instances_end"]
	t.Logf("attainment %.4f, instances peak %.0f end %.0f, %d requests, latency %+v", s.SLOAttainment, peak, end, s.Requests, s.LatencyMS)
	if peak < 3 {
		t.Errorf("instances_peak = %.0f, want ≥ 3 for a burst of 300 rps on workers of 100 rps", peak)
	}
	if end >= peak {
		t.Errorf("instances_end = %.0f, want below the peak %.0f after the burst", end, peak)
	}
	switch {
	case raceEnabled:
		// INFless plans with the profile it is given (100 rps per b = 1 worker, nominal) and, as
		// in the paper, has no SLO feedback; under the race detector the workers (this test
		// binary) and the gateway round trip take several times longer than that profile, so
		// the b = 1 instances fall behind and admission turns the burst away (measured: 0.18–0.22
		// attained, 76 % refused with 429). The placement and scaling above still hold; the
		// attainment is a measurement only without -race.
		t.Logf("race detector on: slo_attainment %.4f not checked", s.SLOAttainment)
	case s.SLOAttainment < 0.8:
		t.Errorf("slo_attainment = %.4f, want ≥ 0.8 (1.0 on a quiet machine)", s.SLOAttainment)
	}
}

// runDemoController runs `sloserve demo --controller name --duration load --json` with the test
// binary as the worker processes, within limit, and returns its Summary; it skips the test when
// the machine was too starved to send the load.
func runDemoController(t *testing.T, name string, load, limit time.Duration) slo.Summary {
	t.Helper()
	t.Setenv("SLOSERVE_TEST_AS_MAIN", "1")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"demo", "--controller", name, "--duration", load.String(), "--json"}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("demo: %v\n%s", err, errb.String())
	}
	var s slo.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("summary: %v: %s", err, out.String())
	}
	if late := s.Extra["client_late_sends"]; s.Requests > 0 && late > 0.5*float64(s.Requests) {
		// More than half the requests left the generator over 1 ms late: the machine is too
		// starved to run the load it is asked to measure (seen at load average 28 on 2 cores),
		// so neither the scaling nor the attainment says anything about the controller.
		t.Skipf("machine starved: %.0f of %d requests sent late; attainment %.4f not a measurement", late, s.Requests, s.SLOAttainment)
	}
	return s
}
