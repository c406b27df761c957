// Package slo provides the latency SLO specification, the shared Summary every measuring
// command prints, and the latency trackers (sliding windows, quantiles) used to compute it.
package slo
