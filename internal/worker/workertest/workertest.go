// Package workertest lets a test binary serve as a real worker process for the local provider:
// one copy of the `sloserve worker` flags the provider passes, so tests in several packages do not
// drift from them (a copy without --max-in-flight never became ready).
package workertest

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/worker"
	bundled "github.com/sloserve/sloserve/models"
)

type bundledCatalog struct{}

func (bundledCatalog) Names() []string { return bundled.Names() }
func (bundledCatalog) Open(name string, opts models.Options) (models.Runner, models.Metadata, error) {
	return bundled.Open(name, opts)
}

// BundledMain runs `worker --addr A --models m[,m…]` (args[0] is "worker"): it loads the bundled
// models on the native runtime and serves them like `sloserve worker` until SIGTERM or interrupt,
// honouring the local provider's --max-in-flight, --min-row-time and --cpu-share. It returns the
// process's exit status (2 for bad arguments).
func BundledMain(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "")
	names := fs.String("models", "", "")
	fs.String("runtime", "", "")
	fs.String("onnxruntime-lib", "", "")
	fs.Int("threads", 1, "")
	cfg := worker.DefaultConfig()
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", cfg.MaxInFlight, "")
	fs.DurationVar(&cfg.MinRowTime, "min-row-time", 0, "")
	fs.Float64Var(&cfg.CPUShare, "cpu-share", 0, "")
	if len(args) == 0 || fs.Parse(args[1:]) != nil {
		return 2
	}
	ms, err := worker.Load(bundledCatalog{}, worker.LoadConfig{Names: strings.Split(*names, ","), Options: models.Options{Runtime: models.RuntimeNative}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := worker.New(cfg, ms, worker.Deps{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := w.Serve(ctx, ln); err != nil {
		return 1
	}
	return 0
}
