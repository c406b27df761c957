// Package batching provides the batch-queue policies — none, fixed (MArk §4.3), mlproxy
// (MLProxy Alg. 1 and 2) and their successors — as pure decisions over a queue snapshot and now.
package batching
