// Package metrics is the gateway's measurements: its Prometheus series (requests by outcome,
// durations and queue waits in buckets aligned to each model's SLO threshold, batch sizes, queue
// depth, instances, SLO attainment over a window), each model's Triton statistics, and the Go
// runtime and build-info collectors. A Model observes its model's batcher (batcher.Observer).
package metrics
