package batcher

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// Sentinel errors the batcher answers with. Each wraps the oip sentinel that gives its HTTP
// status (oip.StatusOf is the one mapping table), so callers may test either. Their texts say
// "gateway:": they are what the gateway's clients read.
var (
	// ErrQueueFull means the model's bounded queue is full; retry later (429, Retry-After).
	ErrQueueFull = fmt.Errorf("gateway: queue full: %w", oip.ErrOverloaded)
	// ErrDeadline means the request's deadline passed before an instance could take it (504).
	ErrDeadline = fmt.Errorf("gateway: %w before dispatch", oip.ErrDeadline)
	// ErrShuttingDown means the gateway is closing and failed the request (503, Retry-After).
	ErrShuttingDown = fmt.Errorf("gateway: shutting down: %w", oip.ErrUnavailable)
	// ErrBackendUnavailable means the instance could not be reached or is overloaded (503).
	ErrBackendUnavailable = fmt.Errorf("gateway: backend %w", oip.ErrUnavailable)
)

// BadGatewayError means the instance failed the batch; the handler answers 502. Its Error is
// what the client sees: a generic text and the instance's HTTP status, never the instance's own
// message (paths, addresses, stack traces); Detail has that message, for the gateway's log. It
// reports itself as an *oip.StatusError through As (and deliberately has no Unwrap), so that
// oip.StatusOf, which tests sentinels before status errors, answers 502 rather than 500.
type BadGatewayError struct {
	// Msg is the instance's error, for logs only.
	Msg string
	// Code is the instance's HTTP status, 0 when it sent none (an answer that could not be
	// used).
	Code int
}

func (e *BadGatewayError) Error() string {
	if e.Code > 0 {
		return "gateway: backend failed (instance answered HTTP " + strconv.Itoa(e.Code) + ")"
	}
	return "gateway: backend failed (unusable answer from the instance)"
}

// Detail returns the instance's own error text, for logs.
func (e *BadGatewayError) Detail() string { return e.Msg }

// As implements the errors.As protocol for *oip.StatusError.
func (e *BadGatewayError) As(target any) bool {
	if p, ok := target.(**oip.StatusError); ok {
		*p = &oip.StatusError{Code: http.StatusBadGateway, Message: e.Error()}
		return true
	}
	return false
}

// hiddenError is an error whose Error is safe to send to clients (err's text) while detail, the
// instance's or transport's own text (addresses, paths), goes to the gateway's log only.
type hiddenError struct {
	err    error
	detail string
}

func (e *hiddenError) Error() string  { return e.err.Error() }
func (e *hiddenError) Unwrap() error  { return e.err }
func (e *hiddenError) Detail() string { return e.detail }

// backendError maps an error of the backend for a batch of n requests to the gateway's answer:
// an instance's 4xx for a batch of one is the client's own error and passes through; an
// overloaded or unreachable instance is 503; anything else is 502. Only the 4xx passes the
// instance's text on; the others keep it for the log (Detail).
func backendError(err error, n int) error {
	var se *oip.StatusError
	switch {
	case errors.As(err, &se) && (se.Code == http.StatusTooManyRequests || se.Code == http.StatusServiceUnavailable):
		return oip.WithRetryAfter(&hiddenError{err: ErrBackendUnavailable, detail: err.Error()}, max(se.RetryAfter, time.Second))
	case errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && n == 1:
		return err
	case errors.As(err, &se):
		return &BadGatewayError{Msg: err.Error(), Code: se.Code}
	case errors.Is(err, oip.ErrBadRequest), errors.Is(err, oip.ErrInternal), errors.Is(err, oip.ErrTooLarge):
		return &BadGatewayError{Msg: err.Error()}
	}
	// Transport errors: the instance is down or the connection broke.
	return &hiddenError{err: ErrBackendUnavailable, detail: err.Error()}
}
