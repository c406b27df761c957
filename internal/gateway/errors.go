package gateway

import (
	"errors"
	"net/http"
)

// Sentinel errors the gateway answers with; statusOf maps them to HTTP status codes.
var (
	// ErrModelNotFound means the request names a model the gateway does not serve.
	ErrModelNotFound = errors.New("model not found")
	// ErrQueueFull means the model's bounded queue is full; the client should retry later.
	ErrQueueFull = errors.New("queue full")
	// ErrDeadline means the request's deadline passed before an instance could take it.
	ErrDeadline = errors.New("deadline exceeded before dispatch")
	// ErrShuttingDown means the gateway is closing and failed the request.
	ErrShuttingDown = errors.New("gateway shutting down")
	// ErrBackend means the instance answered the batch with an error.
	ErrBackend = errors.New("backend failed")
	// ErrUnavailable means no instance could be reached.
	ErrUnavailable = errors.New("backend unavailable")
)

// outcome labels for sloserve_requests_total; bounded set.
const (
	outcomeOK         = "ok"
	outcomeBadRequest = "bad_request"
	outcomeNotFound   = "not_found"
	outcomeRejected   = "rejected"
	outcomeTimeout    = "timeout"
	outcomeBackend    = "backend_error"
	outcomeUnavail    = "unavailable"
	outcomeShutdown   = "shutdown"
	outcomeCanceled   = "canceled"
)

var outcomes = []string{outcomeOK, outcomeBadRequest, outcomeNotFound, outcomeRejected, outcomeTimeout,
	outcomeBackend, outcomeUnavail, outcomeShutdown, outcomeCanceled}

// classify maps an error to its HTTP status and outcome label: the one table at the edge.
func classify(err error) (int, string) {
	var be *BackendError
	switch {
	case err == nil:
		return http.StatusOK, outcomeOK
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, outcomeBadRequest
	case errors.Is(err, ErrModelNotFound):
		return http.StatusNotFound, outcomeNotFound
	case errors.Is(err, ErrQueueFull):
		return http.StatusTooManyRequests, outcomeRejected
	case errors.Is(err, ErrDeadline):
		return http.StatusGatewayTimeout, outcomeTimeout
	case errors.Is(err, ErrShuttingDown):
		return http.StatusServiceUnavailable, outcomeShutdown
	case errors.As(err, &be) && be.Status == 0, errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable, outcomeUnavail
	case errors.As(err, &be) && be.Status >= 400 && be.Status < 500 && be.Status != http.StatusTooManyRequests:
		// A batch of one that the instance refused: the client's own request was bad.
		return be.Status, outcomeBadRequest
	default:
		return http.StatusBadGateway, outcomeBackend
	}
}
