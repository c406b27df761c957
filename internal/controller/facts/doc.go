// Package facts shares the gateway replicas' per-model counters (arrivals, completions, SLO
// misses, time in system, queue lengths): each replica serves its own on GET /internal/v1/facts,
// and the leader's Gatherer fetches its peers' (a static list or the gateway Service's
// EndpointSlices) and sums them into the whole fleet's, so that the controller's monitors — MArk's
// arrival monitor (§4.2) and SLO monitor (§4.4) — see every replica's traffic.
package facts
