// Package admission is the one admission estimator (MArk's Bouncer, §4.1, with a learned cost):
// whether a model's instances finish a request before its deadline (Admit), on a batch cost fitted
// to the batches seen and a margin a miss controller keeps (Estimator). The live gateway refuses
// with it (429 + Retry-After); the simulator applies it to every simulated request, and a
// policy's router decides whether a refusal spills to the serverless tier.
package admission
