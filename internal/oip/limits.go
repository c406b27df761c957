package oip

import (
	"context"
	"fmt"
)

// errContextDeadline and errContextCanceled keep StatusOf's switch readable.
var (
	errContextDeadline = context.DeadlineExceeded
	errContextCanceled = context.Canceled
)

// Limits bounds what the decoder accepts, so that a hostile body cannot exhaust memory. Zero
// fields take their defaults (DefaultLimits) wherever Limits are used.
type Limits struct {
	// MaxBodyBytes is the largest accepted request (or, in the Client, response) body, in bytes.
	MaxBodyBytes int64
	// MaxTensorElements is the largest element count of one tensor.
	MaxTensorElements int64
	// MaxTotalElements is the largest element count summed over all tensors of one message.
	MaxTotalElements int64
	// MaxTensors is the largest number of inputs (or outputs) in one message.
	MaxTensors int
	// MaxDepth is the deepest JSON nesting accepted (nested "data" arrays count).
	MaxDepth int
}

// Default limits: a 64 MiB body holds a batch of ~1000 784-float images written with full
// float32 precision (~10 bytes per element); 16 Mi elements per message bounds the decoded size to
// 64 MiB of float32.
const (
	DefaultMaxBodyBytes      = 64 << 20
	DefaultMaxTensorElements = 16 << 20
	DefaultMaxTotalElements  = 16 << 20
	DefaultMaxTensors        = 64
	DefaultMaxDepth          = 32
)

// DefaultLimits returns the limits used when none are configured.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:      DefaultMaxBodyBytes,
		MaxTensorElements: DefaultMaxTensorElements,
		MaxTotalElements:  DefaultMaxTotalElements,
		MaxTensors:        DefaultMaxTensors,
		MaxDepth:          DefaultMaxDepth,
	}
}

// Validate reports the first field that is out of range.
func (l Limits) Validate() error {
	switch {
	case l.MaxBodyBytes <= 0:
		return fmt.Errorf("limits.max_body_bytes: must be > 0, got %d", l.MaxBodyBytes)
	case l.MaxTensorElements <= 0:
		return fmt.Errorf("limits.max_tensor_elements: must be > 0, got %d", l.MaxTensorElements)
	case l.MaxTotalElements <= 0:
		return fmt.Errorf("limits.max_total_elements: must be > 0, got %d", l.MaxTotalElements)
	case l.MaxTensors <= 0:
		return fmt.Errorf("limits.max_tensors: must be > 0, got %d", l.MaxTensors)
	case l.MaxDepth < 4:
		return fmt.Errorf("limits.max_depth: must be >= 4, got %d", l.MaxDepth)
	}
	return nil
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.MaxTensorElements == 0 {
		l.MaxTensorElements = d.MaxTensorElements
	}
	if l.MaxTotalElements == 0 {
		l.MaxTotalElements = d.MaxTotalElements
	}
	if l.MaxTensors == 0 {
		l.MaxTensors = d.MaxTensors
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = d.MaxDepth
	}
	return l
}
