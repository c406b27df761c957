package gateway

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"

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

// limitListener returns a Listener that accepts at most n simultaneously open connections;
// Accept waits while n are open (golang.org/x/net/netutil.LimitListener, without the module).
func limitListener(l net.Listener, n int) net.Listener {
	return &limitedListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	sem       chan struct{}
	closeOnce sync.Once
	done      chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitedListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
