// Package ensemble provides Cocktail's ensemble decisions (Gunasekaran et al., NSDI'22, §4):
// latency-feasible candidates, the binomial accuracy model, cost-minimal and dynamic model
// selection, class-weighted majority and soft voting with per-request early exit, importance
// weights, cost-aware procurement and least-free-slot packing — all pure functions of facts
// and now.
package ensemble
