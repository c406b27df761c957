package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/telemetry"
	"github.com/sloserve/sloserve/internal/worker"
	bundled "github.com/sloserve/sloserve/models"
)

// bundledCatalog adapts the embedded bundle to worker.Catalog.
type bundledCatalog struct{}

func (bundledCatalog) Names() []string { return bundled.Names() }
func (bundledCatalog) Open(name string, opts models.Options) (models.Runner, models.Metadata, error) {
	return bundled.Open(name, opts)
}

// runWorker serves models over OIP v2 REST until interrupted; it prints
// "listening on http://HOST:PORT" on stdout once the models are loaded and the port is bound.
func runWorker(ctx context.Context, args []string, e env) error {
	cfg := worker.DefaultConfig()
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen `host:port` (port 0 picks a free port)")
	names := fs.String("models", "", "comma-separated model `names` (default: every *.onnx in --model-dir if set, else all bundled: "+strings.Join(bundled.Names(), ",")+")")
	dir := fs.String("model-dir", "", "`dir` of user ONNX files, each served as its file name without .onnx")
	runtime := fs.String("runtime", models.RuntimeNative, "model runtime: native or onnxruntime")
	ortLib := fs.String("onnxruntime-lib", "", "`path` of libonnxruntime.so (default $ONNXRUNTIME_LIB, else .cache/onnxruntime/)")
	threads := fs.Int("threads", 1, "onnxruntime intra-op threads per model")
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", cfg.MaxInFlight, "batches running at once before answering 429 (0 = no limit)")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long a graceful shutdown waits for in-flight batches")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "bound on serving one request after its headers")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error (logs go to stderr)")
	fs.DurationVar(&cfg.MinRowTime, "min-row-time", 0, "a batch of r rows takes at least r × `d` (a nominal instance's speed; 0 = the model's own)")
	fs.Float64Var(&cfg.CPUShare, "cpu-share", 0, "`fraction` of one vCPU, enforced by duty cycle (a function's memory / 1769 MB; 0 = whole)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !slices.Contains(models.Runtimes, *runtime) {
		return usagef("worker: --runtime %q must be one of %s", *runtime, strings.Join(models.Runtimes, ", "))
	}
	if *threads < 1 {
		return usagef("worker: --threads %d must be ≥ 1", *threads)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("worker: --log-level %q must be debug, info, warn or error", *logLevel)
	}
	if err := cfg.Validate(); err != nil {
		return usagef("worker: %v", err)
	}
	if *dir != "" {
		if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
			return usagef("worker: --model-dir %q is not a directory", *dir)
		}
	}
	load := worker.LoadConfig{Dir: *dir, Options: models.Options{Runtime: *runtime, ORTLibrary: *ortLib, IntraOpThreads: *threads}}
	if *names != "" {
		for _, n := range strings.Split(*names, ",") {
			load.Names = append(load.Names, strings.TrimSpace(n))
		}
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	ms, err := worker.Load(bundledCatalog{}, load)
	if err != nil {
		if errors.Is(err, models.ErrRuntimeUnavailable) {
			return fmt.Errorf("worker: %w (set --onnxruntime-lib or ONNXRUNTIME_LIB, or use --runtime native)", err)
		}
		if errors.Is(err, worker.ErrUnknownModel) {
			return usagef("worker: --models: %v", err)
		}
		return fmt.Errorf("worker: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The gateway passes its clients' traceparent on; with $OTEL_EXPORTER_OTLP_ENDPOINT set the
	// worker records its span of each request too.
	tr, err := telemetry.NewTracing(ctx, "sloserve-worker", os.Getenv(telemetry.EnvOTLPEndpoint))
	if err != nil {
		return usagef("worker: $%s: %v", telemetry.EnvOTLPEndpoint, err)
	}
	defer tr.Shutdown(context.Background())
	wrap := func(h http.Handler) http.Handler {
		return telemetry.Middleware(h, telemetry.AccessLogOptions{Tracing: tr})
	}
	w, err := worker.New(cfg, ms, worker.Deps{Logger: logger, Registerer: reg, Wrap: wrap})
	if err != nil {
		for _, m := range ms {
			m.Runner.Close()
		}
		return err
	}
	defer w.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("worker: --addr %s: %w", cfg.Addr, err)
	}
	fmt.Fprintf(e.stdout, "listening on http://%s\n", ln.Addr())
	return w.Serve(ctx, ln)
}
