package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/models"
	bundled "github.com/sloserve/sloserve/models"
)

// runServe runs the gateway and its fleet (local workers, or pods with provider.kind
// kubernetes or $SLOSERVE_PROVIDER=kubernetes) until interrupted.
func runServe(ctx context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "", "serving configuration `file` (YAML, see examples/serve.yaml); default: every bundled model on 127.0.0.1:8080")
	addr := fs.String("addr", "", "override gateway.addr (`host:port`)")
	grpcAddr := fs.String("grpc-addr", "", "override gateway.grpc_addr: serve OIP v2 over gRPC too (`host:port`)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("serve: --log-level %q must be debug, info, warn or error", *logLevel)
	}
	cfg := defaultServeConfig()
	if *path != "" {
		c, err := config.Load(*path)
		if err != nil {
			return usagef("serve: --config: %v", err)
		}
		cfg = c
	}
	if *addr != "" {
		cfg.Gateway.Addr = *addr
	}
	if *grpcAddr != "" {
		cfg.Gateway.GRPCAddr = *grpcAddr
	}
	if cfg.Gateway.AdminToken == "" {
		cfg.Gateway.AdminToken = os.Getenv("SLOSERVE_ADMIN_TOKEN")
	}
	if err := cfg.ApplyEnv(os.Getenv); err != nil {
		return usagef("serve: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		return usagef("serve: %v", err)
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	if _, err := gateway.RaiseFileLimit(); err != nil {
		log.Warn("serve: could not raise the open-files limit; the connection budget is sized below the current one", "err", err)
	}
	// Listen first: /v2/health/live answers while the fleet comes up (pods pending, images
	// pulling), /v2/health/ready says 503 until it is up.
	st, err := gateway.Listen(ctx, cfg, gateway.StackOptions{Logger: log})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(e.stdout, "sloserve gateway listening on %s (starting the fleet: /v2/health/ready is 503 until it is up)\n", st.URL)
	if err := st.Wait(ctx); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		st.Close(sctx)
		if ctx.Err() != nil {
			fmt.Fprintln(e.stdout, "sloserve gateway stopped before its fleet was up")
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(e.stdout, "sloserve gateway ready on %s (models: %v; metrics at /metrics)\n", st.URL, st.Gateway.ModelNames())
	fmt.Fprintf(e.stdout, "dashboard at %s/ui; TF Serving/KServe V1 at /v1/models; SageMaker at /ping, /invocations; controller %s\n", st.URL, cfg.Controller.Policy)
	if st.GRPCAddr != "" {
		fmt.Fprintf(e.stdout, "OIP v2 gRPC on %s\n", st.GRPCAddr)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	failed, err := st.Close(sctx)
	fmt.Fprintf(e.stdout, "sloserve gateway stopped (%d waiting requests failed)\n", failed)
	return err
}

// defaultServeConfig serves every bundled model with one worker each and the mlproxy policy,
// on the workers' fastest available runtime.
func defaultServeConfig() config.Config {
	cfg := config.Default()
	cfg.Workers.Runtime, cfg.Workers.ONNXRuntimeLib = workerRuntime()
	// Sixteen models on one machine, most of them idle at any time: the sloserve controller may
	// release an idle model's last worker once LSTH's keep-alive windows have passed (20 min
	// with no history on the default 5 s clock); its next request waits for a cold start.
	cfg.Controller.MinInstances = 0
	for _, n := range bundled.Names() {
		m := config.DefaultModel(n)
		m.Batching.Policy = batching.PolicyMLProxy
		cfg.Models = append(cfg.Models, m)
	}
	return cfg
}

// workerRuntime picks onnxruntime when its library is found (as `make setup` installs it), else
// the pure-Go native runtime.
func workerRuntime() (runtime, lib string) {
	if p, err := models.FindORTLibrary(""); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			if _, err := os.Stat(abs); err == nil {
				return models.RuntimeONNXRuntime, abs
			}
		}
	}
	return models.RuntimeNative, ""
}
