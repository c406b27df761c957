// Package bench measures the gateway: Bench compares a request through the gateway (batching
// none) with a direct call to the worker and a bare httputil.ReverseProxy, and BenchProtocols
// compares the gateway's protocols (REST JSON, REST binary tensors, gRPC raw) from one run. Both
// drive the open-loop generator of package load; `sloserve bench gateway` prints their tables.
package bench
