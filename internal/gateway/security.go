package gateway

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"google.golang.org/grpc/credentials"

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

// grpcTLS returns the gRPC server credentials of the gateway's certificate (gateway.tls_cert and
// gateway.tls_key, shared with the REST endpoint), TLS 1.2 at least, with h2 negotiated by ALPN.
func grpcTLS(certFile, keyFile string) (credentials.TransportCredentials, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("gateway.tls_cert %s / gateway.tls_key %s: %w", certFile, keyFile, err)
	}
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

// warnExposed logs a warning when the gateway listens beyond loopback with its admin endpoints
// open (no admin token) or without TLS.
func warnExposed(log *slog.Logger, gc config.Gateway) {
	if _, _, err := net.SplitHostPort(gc.Addr); err != nil || isLoopback(gc.Addr) {
		return
	}
	if gc.AdminToken == "" {
		log.Warn("gateway listens beyond loopback with no admin token: ensemble feedback and dashboard data are open to anyone who can reach it; set gateway.admin_token or SLOSERVE_ADMIN_TOKEN", "addr", gc.Addr)
	}
	if gc.TLSCert == "" {
		log.Warn("gateway listens beyond loopback without TLS; set gateway.tls_cert and gateway.tls_key", "addr", gc.Addr)
	}
}

// warnExposedGRPC logs a warning when the gRPC endpoint listens beyond loopback without TLS (the
// gateway has no TLS certificate); it has no authentication either.
func warnExposedGRPC(log *slog.Logger, addr string) {
	if addr == "" || isLoopback(addr) {
		return
	}
	log.Warn("gateway gRPC listens beyond loopback without TLS or authentication; anyone who can reach it may send inference requests; bind gateway.grpc_addr to 127.0.0.1 or put it behind a TLS proxy", "grpc_addr", addr)
}

// isLoopback reports whether the listen address addr (host:port) binds loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return (ip != nil && ip.IsLoopback()) || host == "localhost"
}
