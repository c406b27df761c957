// Package gateway is sloserve's live front end: an Open Inference Protocol v2 server that queues
// each model's requests in a batcher.Batcher (package batcher) driven by a batching.Policy, sends
// batches to the model's ready instances and answers every request exactly once.
//
//	HTTP ─▶ oip.NewHandler (decode, validate) ─▶ Gateway.Infer (oip.Core)
//	         ─▶ batcher.Batcher of the model (one goroutine: queue, timer, policy, instances)
//	              Decide on arrival / completion / timer ─▶ dispatch.Picker ─▶ flight
//	         ─▶ the first request's goroutine sends the flight (Backend: oip.Concat, binary tensors to
//	            the worker, oip.Split) and answers every request of it
//	         ─▶ completion back to the batcher: slot freed, Policy.Observe, drain finished
//
// The batcher is the size-or-deadline loop of prometheus storage/remote/queue_manager.go
// (runShard) with every decision delegated to the policy, so the simulator drives the same
// policies. Answers: the result; 429 + Retry-After when the bounded queue is full; 504 when a
// request's deadline (arrival + SLO threshold, or its parameters.timeout) passes before
// dispatch; 502/503 when the instance fails or cannot be reached (an unreachable instance's
// batch first goes to another usable instance); 503 for requests still waiting at Close.
// Instances come and go with AddInstance/RemoveInstance (drain) or Sync/Watch over a provider.
// Listen opens the gateway's listeners (HTTP, gRPC, admin) behind its connection and body
// budgets; package app composes a whole stack (providers, controller, dashboard) around it, and
// package load/bench measures it.
package gateway
