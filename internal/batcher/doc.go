// Package batcher is the per-model batching runtime of the live gateway: one Batcher owns one
// model's bounded queue, its instances and its batching.Policy, and runs the size-or-deadline
// loop on its own goroutine — admission by deadline (internal/admission's estimator), dispatch to
// the instance a dispatch.Picker chooses, retries of batches whose instance crashed or hung, and
// drains. The gateway (HTTP, routing, fan-out) sits above it and observes it through Observer.
package batcher
