package gateway

import (
	"errors"
	"fmt"

	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/oip"
)

// Sentinel errors the gateway answers with. Each wraps the oip sentinel that gives its HTTP
// status (oip.StatusOf is the one mapping table), so callers may test either.
var (
	// ErrModelNotFound means the request names a model the gateway does not serve (404).
	ErrModelNotFound = fmt.Errorf("gateway: %w", oip.ErrModelNotFound)
	// ErrQueueFull is batcher.ErrQueueFull.
	ErrQueueFull = batcher.ErrQueueFull
	// ErrDeadline is batcher.ErrDeadline.
	ErrDeadline = batcher.ErrDeadline
	// ErrShuttingDown is batcher.ErrShuttingDown.
	ErrShuttingDown = batcher.ErrShuttingDown
	// ErrNoMetadata means no instance of the model has reported its metadata yet (503).
	ErrNoMetadata = fmt.Errorf("gateway: model metadata not known yet (no instance reached): %w", oip.ErrUnavailable)
	// ErrBackendUnavailable is batcher.ErrBackendUnavailable.
	ErrBackendUnavailable = batcher.ErrBackendUnavailable
	// ErrInstancesBusy is batcher.ErrInstancesBusy.
	ErrInstancesBusy = batcher.ErrInstancesBusy
)

// BadGatewayError means the instance failed the batch (batcher.BadGatewayError); the handler
// answers 502.
type BadGatewayError = batcher.BadGatewayError

// detailOf returns the hidden instance text of an answer's error, if any.
func detailOf(err error) (string, bool) {
	var d interface{ Detail() string }
	if errors.As(err, &d) {
		return d.Detail(), true
	}
	return "", false
}
