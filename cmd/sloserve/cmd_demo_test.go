package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestServingCommandsUsageErrors: bad flags of demo, serve, load and bench are usage errors
// (exit status 2) naming the flag, and fail before starting anything.
func TestServingCommandsUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"demo bad policy", []string{"demo", "--batching", "magic"}, "--batching"},
		{"demo zero rps", []string{"demo", "--rps", "0"}, "--rps"},
		{"demo short duration", []string{"demo", "--duration", "1s"}, "--duration"},
		{"demo unknown model", []string{"demo", "--model", "nope"}, "--model"},
		{"demo unknown flag", []string{"demo", "--nope"}, "nope"},
		{"serve missing config", []string{"serve", "--config", "/does/not/exist.yaml"}, "--config"},
		{"serve bad addr", []string{"serve", "--addr", "nohostport"}, "gateway.addr"},
		{"serve bad grpc addr", []string{"serve", "--grpc-addr", "nope"}, "gateway.grpc_addr"},
		{"serve bad log level", []string{"serve", "--log-level", "loud"}, "--log-level"},
		{"load bad target", []string{"load", "--target", "ftp://x"}, "--target"},
		{"load zero duration", []string{"load", "--duration", "0s"}, "--duration"},
		{"load missing trace", []string{"load", "--trace", "/does/not/exist.csv"}, "--trace"},
		{"load bad slo", []string{"load", "--slo-target", "2"}, "--slo"},
		{"bench no subcommand", []string{"bench"}, "bench gateway"},
		{"bench bad concurrency", []string{"bench", "gateway", "--concurrency", "0"}, "--concurrency"},
		{"bench unknown model", []string{"bench", "gateway", "--model", "nope"}, "--model"},
		{"bench negative replicas", []string{"bench", "gateway", "--replicas", "-1"}, "--replicas"},
		{"bench zero workers", []string{"bench", "gateway", "--replicas", "2", "--workers", "0"}, "--workers"},
		{"bench zero slots", []string{"bench", "gateway", "--replicas", "2", "--slots", "0"}, "--slots"},
		{"bench unknown policy", []string{"bench", "gateway", "--replicas", "2", "--policy", "magic"}, "--policy"},
		{"bench replica counts not increasing", []string{"bench", "gateway", "--replicas", "1,3,2"}, "--replicas"},
		{"bench replica count too large", []string{"bench", "gateway", "--replicas", "1,17"}, "--replicas"},
		{"bench negative row time", []string{"bench", "gateway", "--replicas", "2", "--row-time", "-1ms"}, "--row-time"},
		{"bench negative gateway procs", []string{"bench", "gateway", "--replicas", "2", "--gateway-procs", "-1"}, "--gateway-procs"},
		{"serve instances not model=URL", []string{"serve", "--instances", "logreg"}, "--instances"},
		{"serve instances bad URL", []string{"serve", "--instances", "logreg=ftp://x"}, "--instances"},
		{"serve instances unknown model", []string{"serve", "--instances", "nope=http://127.0.0.1:1"}, "--instances"},
		{"serve delay beyond grace", []string{"serve", "--config", "testdata/serve-bad-shutdown.yaml"}, "gateway.shutdown_delay"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("run %v: got %v, want a usage error", tc.args, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run %v: error %q does not name %q", tc.args, err, tc.want)
			}
			if code := exitCode(err, &errb); code != 2 {
				t.Errorf("exit status (-want +got): -2 +%d", code)
			}
		})
	}
}

// TestDemoSloserveTiers: `demo --controller sloserve` turns the function tier on (and
// --serverless=false off), bounds the VM fleet below the burst and runs every worker at its
// nominal speed; other controllers are left as they were. No process is started.
func TestDemoSloserveTiers(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		serverless bool
	}{
		{[]string{"--controller", "sloserve"}, true},
		{[]string{"--controller", "sloserve", "--serverless=false"}, false},
		{[]string{"--controller", "mark"}, false},
	} {
		o, err := parseDemoFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		cfg, m := demoConfig(o)
		if cfg.Serverless.Enabled != tc.serverless {
			t.Errorf("%v: serverless.enabled = %v, want %v", tc.args, cfg.Serverless.Enabled, tc.serverless)
		}
		sl := o.ctlName == "sloserve"
		if pad := strings.Contains(strings.Join(cfg.Workers.Args, " "), "--min-row-time 10ms"); pad != sl {
			t.Errorf("%v: worker args %v; want --min-row-time 10ms only under sloserve", tc.args, cfg.Workers.Args)
		}
		if burst := 1.5 * o.rps; sl && float64(cfg.Controller.MaxInstances)*m.InstanceType.RPS >= burst {
			t.Errorf("%v: fleet capacity %d × %v rps ≥ the burst's %v rps", tc.args, cfg.Controller.MaxInstances, m.InstanceType.RPS, burst)
		}
	}
}
