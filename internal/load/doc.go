// Package load is sloserve's open-loop load generator: it sends inference requests at arrival
// times scheduled in advance, never waiting for answers, and measures each latency from the
// scheduled send time, so that a slow server cannot slow the load down (no coordinated omission).
package load
