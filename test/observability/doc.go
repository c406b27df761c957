// Package observability checks the shipped Prometheus rules and Grafana dashboard of
// deploy/observability against promtool and against the metrics the gateway really exports.
package observability
