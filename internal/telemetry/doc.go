// Package telemetry provides the gateway's operator-facing signals beyond metrics: the slog
// handler (text or JSON), request ids (X-Request-Id), the access log and the admin (pprof)
// server.
package telemetry
