// Package models opens ONNX models behind one Runner interface with two runtimes — a pure-Go
// interpreter ("native") and ONNX Runtime ("onnxruntime") — and measures their service time per
// batch size and per operator (see README.md).
package models
