// Package repository reads a Triton-style model repository: <dir>/<model>/<version>/model.onnx
// with each model's optional <dir>/<model>/config.yaml of sloserve settings.
package repository
