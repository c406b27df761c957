// Package worker provides sloserve's built-in Open Inference Protocol v2 model server: an oip.Core
// over loaded ONNX models that runs each request as one batch and reports its service time.
package worker
