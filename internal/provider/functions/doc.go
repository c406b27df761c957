// Package functions is the function tier (provider.TierServerless) shared by the providers:
// per (model, memory size) a pool of scale-to-zero instances, each serving one invocation (one
// batch) at a time as a Lambda instance does, released by a keep-alive policy, cold starts
// measured and every invocation billed per GB-second and per request (BATCH Eq. 1). A Runtime
// makes the instances: worker processes (internal/provider/local) or pods
// (internal/provider/kubernetes).
package functions
