package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// Sentinel errors the gateway answers with. Each wraps the oip sentinel that gives its HTTP
// status (oip.StatusOf is the one mapping table), so callers may test either.
var (
	// ErrModelNotFound means the request names a model the gateway does not serve (404).
	ErrModelNotFound = fmt.Errorf("gateway: %w", oip.ErrModelNotFound)
	// ErrQueueFull means the model's bounded queue is full; retry later (429, Retry-After).
	ErrQueueFull = fmt.Errorf("gateway: queue full: %w", oip.ErrOverloaded)
	// ErrDeadline means the request's deadline passed before an instance could take it (504).
	ErrDeadline = fmt.Errorf("gateway: %w before dispatch", oip.ErrDeadline)
	// ErrShuttingDown means the gateway is closing and failed the request (503, Retry-After).
	ErrShuttingDown = fmt.Errorf("gateway: shutting down: %w", oip.ErrUnavailable)
	// ErrNoMetadata means no instance of the model has reported its metadata yet (503).
	ErrNoMetadata = fmt.Errorf("gateway: model metadata not known yet (no instance reached): %w", oip.ErrUnavailable)
	// ErrBackendUnavailable means the instance could not be reached or is overloaded (503).
	ErrBackendUnavailable = fmt.Errorf("gateway: backend %w", oip.ErrUnavailable)
)

// BadGatewayError means the instance failed the batch; the handler answers 502. It reports
// itself as an *oip.StatusError through As (and deliberately has no Unwrap), so that
// oip.StatusOf, which tests sentinels before status errors, answers 502 rather than 500.
type BadGatewayError struct {
	// Msg is the instance's error.
	Msg string
}

func (e *BadGatewayError) Error() string { return "gateway: backend failed: " + e.Msg }

// As implements the errors.As protocol for *oip.StatusError.
func (e *BadGatewayError) As(target any) bool {
	if p, ok := target.(**oip.StatusError); ok {
		*p = &oip.StatusError{Code: http.StatusBadGateway, Message: e.Error()}
		return true
	}
	return false
}

// backendError maps an error of the backend for a batch of n requests to the gateway's answer:
// an instance's 4xx for a batch of one is the client's own error and passes through; an
// overloaded or unreachable instance is 503; anything else is 502.
func backendError(err error, n int) error {
	var se *oip.StatusError
	switch {
	case errors.As(err, &se) && (se.Code == http.StatusTooManyRequests || se.Code == http.StatusServiceUnavailable):
		return oip.WithRetryAfter(fmt.Errorf("%w: %v", ErrBackendUnavailable, err), max(se.RetryAfter, time.Second))
	case errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && n == 1:
		return err
	case errors.As(err, &se):
		return &BadGatewayError{Msg: err.Error()}
	case errors.Is(err, oip.ErrBadRequest), errors.Is(err, oip.ErrInternal), errors.Is(err, oip.ErrTooLarge):
		return &BadGatewayError{Msg: err.Error()}
	}
	// Transport errors: the instance is down or the connection broke.
	return fmt.Errorf("%w: %v", ErrBackendUnavailable, err)
}

// outcome labels for sloserve_requests_total: a bounded set derived from the status code.
const (
	outcomeOK         = "ok"
	outcomeBadRequest = "bad_request"
	outcomeRejected   = "rejected"
	outcomeTimeout    = "timeout"
	outcomeBackend    = "backend_error"
	outcomeUnavail    = "unavailable"
	outcomeCanceled   = "canceled"
	outcomeOther      = "error"
)

var outcomes = []string{outcomeOK, outcomeBadRequest, outcomeRejected, outcomeTimeout, outcomeBackend,
	outcomeUnavail, outcomeCanceled, outcomeOther}

// outcomeOf maps an answer's HTTP status to its outcome label.
func outcomeOf(code int) string {
	switch {
	case code == http.StatusOK:
		return outcomeOK
	case code == http.StatusTooManyRequests:
		return outcomeRejected
	case code == http.StatusGatewayTimeout:
		return outcomeTimeout
	case code == http.StatusServiceUnavailable:
		return outcomeUnavail
	case code == 499:
		return outcomeCanceled
	case code == http.StatusBadGateway, code == http.StatusInternalServerError:
		return outcomeBackend
	case code >= 400 && code < 500:
		return outcomeBadRequest
	}
	return outcomeOther
}
