// Command demo serves the live dashboard over a synthetic load, for trying the page without a
// gateway: go run ./internal/dashboard/demo --addr 127.0.0.1:8090, then open /ui.
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
	"os/signal"
	"syscall"
	"time"

	"github.com/sloserve/sloserve/internal/dashboard"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address (host:port)")
	token := fs.String("token", "", "bearer token the data endpoint requires (empty: none)")
	prefill := fs.Duration("prefill", 5*time.Minute, "synthetic history to show at start")
	seed := fs.Uint64("seed", 1, "seed of the synthetic load's noise")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	src := dashboard.NewSynthetic(*seed)
	d, err := dashboard.New(src, dashboard.Options{Token: *token, Logger: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Pre-fill the ring with history, one sample per interval, ending now.
	iv := d.Options().Interval
	now := time.Now()
	for t := now.Add(-*prefill); t.Before(now); t = t.Add(iv) {
		if err := d.Step(ctx, t); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/ui", d)
	mux.Handle("/ui/", d)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.Run(ctx) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("dashboard demo listening", "url", "http://"+ln.Addr().String()+"/ui")
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
