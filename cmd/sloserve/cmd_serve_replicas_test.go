package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/load/bench"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/local"
)

// TestServeReplicaSIGTERMLosesNoRequest runs real processes: two workers (each taking 2 batches
// at once, 429 beyond) shared by two `sloserve serve --instances` replicas, closed-loop load
// through both replicas, and SIGTERM to one of them mid-run. The drained replica's readiness
// fails (400, the OIP answer) while it still serves (gateway.shutdown_delay), then it closes its listener, finishes
// what it holds and exits 0 well within its grace; the clients fail over to the other replica on
// the refused connection. Every request is answered: 200 or a counted 429, no 5xx, none lost.
func TestServeReplicaSIGTERMLosesNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two workers and two gateway processes and drives 4 s of load")
	}
	ctx := context.Background()
	env := []string{"SLOSERVE_TEST_AS_MAIN=1"}
	prov, err := local.New(local.Config{Env: env, Args: []string{"--runtime", "native", "--max-in-flight", "2"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Close()
	var insts []string
	for range 2 {
		in, err := prov.Launch(ctx, provider.Spec{Model: "logreg"})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		in, err = prov.WaitReady(wctx, in.ID)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, "logreg="+in.Addr)
	}
	conf := filepath.Join(t.TempDir(), "serve.yaml")
	yaml := "gateway:\n  addr: 127.0.0.1:0\n  shutdown_delay: 500ms\n  shutdown_grace: 10s\n" +
		"models:\n  - name: logreg\n    slo: {threshold: 2s, target: 0.99}\n    slots: 2\n    batching: {policy: mlproxy}\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", conf, "--instances", strings.Join(insts, ","), "--log-level", "warn"}
	var gs [2]*bench.GatewayProcess
	for i := range gs {
		if gs[i], err = bench.StartGateway(ctx, "", args, env, os.Stderr, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		defer gs[i].Kill()
	}
	payloads, err := samplePayloads("logreg", 1)
	if err != nil {
		t.Fatal(err)
	}
	var r load.ClosedResult
	var lerr error
	var wg sync.WaitGroup
	wg.Go(func() {
		r, lerr = load.Closed(ctx, load.ClosedConfig{URLs: []string{gs[0].URL + "/v2/models/logreg/infer", gs[1].URL + "/v2/models/logreg/infer"},
			Payloads: payloads, Concurrency: 8, Duration: 4 * time.Second})
	})
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- gs[1].Terminate(20 * time.Second) }()
	if code := readyCode(t, gs[1].URL); code != http.StatusBadRequest {
		t.Errorf("readiness of the replica shutting down: %d, want not ready (400, OIP's and Triton's answer) during its shutdown_delay", code)
	}
	if err := <-stopped; err != nil {
		t.Errorf("replica after SIGTERM: %v, want a clean exit", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("replica took %v to exit after SIGTERM, grace 10 s", took)
	}
	wg.Wait()
	if lerr != nil {
		t.Fatal(lerr)
	}
	t.Logf("requests %d, codes %v, failovers %d, lost %d", r.Requests, r.Codes, r.Failovers, r.Lost)
	if r.Lost != 0 {
		t.Errorf("%d requests got no answer", r.Lost)
	}
	for code, n := range r.Codes {
		if code != http.StatusOK && code != http.StatusTooManyRequests {
			t.Errorf("%d answers %d, want only 200 and counted 429s", n, code)
		}
	}
	if r.Failovers == 0 {
		t.Errorf("no client failed over to the other replica: the SIGTERM came after the load (test too weak)")
	}
	if r.Requests == 0 {
		t.Errorf("no request answered 200")
	}
}

// readyCode polls the readiness of the gateway at base for up to 400 ms and returns the first
// non-200 status (or 200).
func readyCode(t *testing.T, base string) int {
	t.Helper()
	deadline := time.Now().Add(400 * time.Millisecond)
	code := 0
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/v2/health/ready")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		if code = resp.StatusCode; code != http.StatusOK {
			return code
		}
		time.Sleep(20 * time.Millisecond)
	}
	return code
}
