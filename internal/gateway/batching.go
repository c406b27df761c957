package gateway

import (
	"sync/atomic"

	"github.com/sloserve/sloserve/internal/batcher"
	"github.com/sloserve/sloserve/internal/gateway/metrics"
	"github.com/sloserve/sloserve/internal/oip"
)

// The per-model batching runtime is internal/batcher; these are its names the gateway's callers
// and tests have always used.

// Backend sends one batch to one instance (batcher.Backend).
type Backend = batcher.Backend

// Checker checks an instance's health (batcher.Checker).
type Checker = batcher.Checker

// OIPBackend is the Backend that speaks OIP v2 REST (batcher.OIPBackend).
type OIPBackend = batcher.OIPBackend

// NewOIPBackend is batcher.NewOIPBackend.
func NewOIPBackend(opts oip.ClientOptions) *OIPBackend { return batcher.NewOIPBackend(opts) }

// BatchCost is admission.BatchCost, the batch time estimate.
type BatchCost = batcher.BatchCost

// ParamBatchSize is the response parameter in which the gateway reports how many requests were
// served in the same batch as this one (batcher.ParamBatchSize).
const ParamBatchSize = batcher.ParamBatchSize

// Errors of the batcher the gateway answers with.
var (
	// ErrBatchTimeout is batcher.ErrBatchTimeout (504).
	ErrBatchTimeout = batcher.ErrBatchTimeout
	// ErrCannotMeetDeadline is batcher.ErrCannotMeetDeadline (429, Retry-After).
	ErrCannotMeetDeadline = batcher.ErrCannotMeetDeadline
)

// served is one model the gateway serves: its batcher, and the gateway's measurements of it
// (Prometheus series and Triton statistics), which observe the batcher.
type served struct {
	*batcher.Batcher
	m  *metrics.Model
	fn atomic.Pointer[fnTier] // the model's function tier (functions.go); nil: none
}
