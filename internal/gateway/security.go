package gateway

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"net/http"

	"github.com/sloserve/sloserve/internal/config"
)

// useTLS loads the certificate and key and makes srv serve HTTPS (TLS 1.2 or later).
func useTLS(srv *http.Server, certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("gateway.tls_cert %s / gateway.tls_key %s: %w", certFile, keyFile, err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return nil
}

// warnExposed logs a warning when the gateway listens beyond loopback with its admin endpoints
// open (no admin token) or without TLS.
func warnExposed(log *slog.Logger, gc config.Gateway) {
	host, _, err := net.SplitHostPort(gc.Addr)
	if err != nil {
		return
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return
	}
	if gc.AdminToken == "" {
		log.Warn("gateway listens beyond loopback with no admin token: ensemble feedback and dashboard data are open to anyone who can reach it; set gateway.admin_token or SLOSERVE_ADMIN_TOKEN", "addr", gc.Addr)
	}
	if gc.TLSCert == "" {
		log.Warn("gateway listens beyond loopback without TLS; set gateway.tls_cert and gateway.tls_key", "addr", gc.Addr)
	}
}
