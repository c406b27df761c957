package models

import "context"

// Tensor is a dense float32 tensor in row-major order. The first dimension is the batch.
type Tensor struct {
	Name  string
	Shape []int64
	Data  []float32
}

// Runner executes one loaded model. Run may be called from several goroutines at once; an
// implementation that cannot run concurrently serialises internally.
type Runner interface {
	// Run computes the model's outputs for a batch of inputs (one Tensor per model input).
	Run(ctx context.Context, inputs []Tensor) ([]Tensor, error)
	// Close releases the runtime's resources.
	Close() error
}
