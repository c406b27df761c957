// Package oip provides the Open Inference Protocol v2 (KServe / Triton) REST layer: wire types, a
// strict fast codec, a shared HTTP handler over a Core, a client, and batch concat/split helpers.
package oip
