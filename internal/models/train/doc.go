// Package train trains the bundled Fashion-MNIST classifiers in pure Go (deterministic for a seed)
// and exports them to ONNX with sloserve's own writer.
package train
