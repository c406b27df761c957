package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sloserve/sloserve/internal/app"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/telemetry"
	bundled "github.com/sloserve/sloserve/models"
)

// runServe runs the gateway and its fleet (local workers, or pods with provider.kind
// kubernetes or $SLOSERVE_PROVIDER=kubernetes) until interrupted.
func runServe(ctx context.Context, args []string, e env) error {
	cfg, level, attach, err := parseServeFlags(args)
	if err != nil {
		return err
	}
	log, err := telemetry.NewLogger(e.stderr, cfg.Gateway.LogFormat, level)
	if err != nil {
		return usagef("serve: gateway.log_format: %v", err)
	}
	if _, err := gateway.RaiseFileLimit(); err != nil {
		log.Warn("serve: could not raise the open-files limit; the connection budget is sized below the current one", "err", err)
	}
	tr, workerEnv, err := serveTracing(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer tr.Shutdown(context.Background())
	bv := readBuildVersion()
	st, err := app.Start(ctx, cfg, app.StackOptions{Logger: log, Tracing: tr, Env: workerEnv, Attach: attach,
		Build: gateway.BuildInfo{Version: bv.Version, Commit: bv.Commit, GoVersion: bv.GoVersion}})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(e.stdout, "sloserve gateway listening on %s (models: %v; metrics at /metrics)\n", st.URL, st.Gateway.ModelNames())
	fmt.Fprintf(e.stdout, "dashboard at %s/ui; TF Serving/KServe V1 at /v1/models; SageMaker at /ping, /invocations; controller %s\n", st.URL, cfg.Controller.Policy)
	if st.GRPCAddr != "" {
		fmt.Fprintf(e.stdout, "OIP v2 gRPC on %s\n", st.GRPCAddr)
	}
	serveUntilDone(ctx, st, cfg, log)
	failed, err := st.Shutdown(cfg.Gateway.EffectiveShutdownGrace(), cfg.Gateway.ShutdownDelay)
	fmt.Fprintf(e.stdout, "sloserve gateway stopped (%d waiting requests failed)\n", failed)
	return err
}

// parseServeFlags turns serve's flags (over --config or the bundled default) into a validated
// configuration, the log level and the instances to attach to (--instances); a bad flag or
// field is a usage error naming it.
func parseServeFlags(args []string) (config.Config, slog.Level, []provider.Instance, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", "", "serving configuration `file` (YAML, see examples/serve.yaml); default: every bundled model on 127.0.0.1:8080")
	addr := fs.String("addr", "", "override gateway.addr (`host:port`)")
	grpcAddr := fs.String("grpc-addr", "", "override gateway.grpc_addr: serve OIP v2 over gRPC too (`host:port`)")
	repo := fs.String("model-repository", "", "serve the Triton-style model repository `dir` (<model>/<version>/model.onnx, optional <model>/config.yaml); overrides model_repository; without --config only its models are served")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	logFormat := fs.String("log-format", "", "override gateway.log_format: text or json (one JSON object per line)")
	instances := fs.String("instances", "", "attach to running workers instead of launching any: comma-separated `model=URL` pairs (a gateway replica sharing the workers of another; its controller is none)")
	var level slog.Level
	if err := parseFlags(fs, args); err != nil {
		return config.Config{}, level, nil, err
	}
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return config.Config{}, level, nil, usagef("serve: --log-level %q must be debug, info, warn or error", *logLevel)
	}
	cfg := defaultServeConfig()
	if *repo != "" && *path == "" {
		cfg.Models = nil // only the repository's models
	}
	if *path != "" {
		c, err := config.Load(*path)
		if err != nil {
			return cfg, level, nil, usagef("serve: --config: %v", err)
		}
		cfg = c
	}
	cfg.Gateway.Addr = cmp.Or(*addr, cfg.Gateway.Addr)
	cfg.Gateway.GRPCAddr = cmp.Or(*grpcAddr, cfg.Gateway.GRPCAddr)
	cfg.ModelRepository = cmp.Or(*repo, cfg.ModelRepository)
	if cfg.ModelRepository != "" {
		if st, err := os.Stat(cfg.ModelRepository); err != nil || !st.IsDir() {
			return cfg, level, nil, usagef("serve: --model-repository (model_repository) %q is not a directory", cfg.ModelRepository)
		}
	}
	if *logFormat != "" {
		if *logFormat != telemetry.FormatText && *logFormat != telemetry.FormatJSON {
			return cfg, level, nil, usagef("serve: --log-format %q must be text or json", *logFormat)
		}
		cfg.Gateway.LogFormat = *logFormat
	}
	cfg.Gateway.AdminToken = cmp.Or(cfg.Gateway.AdminToken, os.Getenv("SLOSERVE_ADMIN_TOKEN"))
	attach, err := attachInstances(&cfg, *instances)
	if err != nil {
		return cfg, level, nil, err
	}
	if err := cfg.ApplyEnv(os.Getenv); err != nil {
		return cfg, level, nil, usagef("serve: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, level, nil, usagef("serve: %v", err)
	}
	return cfg, level, attach, nil
}

// attachInstances parses --instances (nil when empty) and makes cfg serve those instances only
// (app.AttachConfig); a bad value is a usage error naming the flag.
func attachInstances(cfg *config.Config, s string) ([]provider.Instance, error) {
	if s == "" {
		return nil, nil
	}
	insts, err := app.ParseInstances(s)
	if err == nil {
		insts, err = app.AttachConfig(cfg, insts)
	}
	if err != nil {
		return nil, usagef("serve: --instances: %v", err)
	}
	return insts, nil
}

// serveTracing starts trace propagation (and export when gateway.otlp_endpoint or
// $OTEL_EXPORTER_OTLP_ENDPOINT names a collector) and returns the environment that points the
// local workers at the same collector.
func serveTracing(ctx context.Context, cfg config.Config, log *slog.Logger) (*telemetry.Tracing, []string, error) {
	otlp := cmp.Or(cfg.Gateway.OTLPEndpoint, os.Getenv(telemetry.EnvOTLPEndpoint))
	tr, err := telemetry.NewTracing(ctx, "sloserve-gateway", otlp)
	if err != nil {
		return nil, nil, usagef("serve: gateway.otlp_endpoint: %v", err)
	}
	var env []string
	if otlp != "" {
		env = append(env, telemetry.EnvOTLPEndpoint+"="+otlp) // the local workers export to the same collector
		log.Info("exporting trace spans over OTLP/HTTP", "endpoint", otlp)
	}
	return tr, env, nil
}

// serveUntilDone serves until ctx ends, rescanning the model repository on every SIGHUP.
func serveUntilDone(ctx context.Context, st *app.Stack, cfg config.Config, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: rescanning the model repository", "dir", cfg.ModelRepository)
			st.Reload()
		}
	}
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
