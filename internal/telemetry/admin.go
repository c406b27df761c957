package telemetry

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Admin is the admin HTTP server: Go's pprof profiles under /debug/pprof/. It is off unless an
// address is configured (gateway.admin_addr), and only on a loopback address, since profiles
// expose the process's internals and cost CPU.
type Admin struct {
	srv *http.Server
	ln  net.Listener
	// Addr is the address it listens on (host:port).
	Addr string
}

// ValidateAdminAddr reports whether addr is a host:port on a loopback host ("" is valid: off).
func ValidateAdminAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: the admin (pprof) port must be on a loopback host (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// StartAdmin listens on addr and serves pprof until Close; log receives a server failure.
func StartAdmin(addr string, log *slog.Logger) (*Admin, error) {
	if err := ValidateAdminAddr(addr); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on admin address %s: %w", addr, err)
	}
	a := &Admin{ln: ln, Addr: ln.Addr().String(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Minute}} // a CPU profile or trace runs for ?seconds=
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && log != nil {
			log.Error("admin server failed", "err", err)
		}
	}()
	return a, nil
}

// Close stops the admin server.
func (a *Admin) Close() error {
	if a == nil {
		return nil
	}
	return a.srv.Close()
}
