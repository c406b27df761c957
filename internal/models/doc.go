// Package models provides the model runtimes (ONNX Runtime and a pure-Go interpreter), the bundled
// Fashion-MNIST classifiers, their training and the ONNX writer that exports them.
package models
