package oip

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Sentinel errors a Core returns (wrapped with context) and callers branch on. StatusOf maps them
// to HTTP status codes in one table; the Client maps status codes back to them.
var (
	// ErrBadRequest: the request is malformed or does not match the model's metadata (400).
	ErrBadRequest = errors.New("bad request")
	// ErrModelNotFound: no such model or version (404).
	ErrModelNotFound = errors.New("model not found")
	// ErrNotFound: no such endpoint (404).
	ErrNotFound = errors.New("not found")
	// ErrMethodNotAllowed: the endpoint exists but not for this method (405).
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrNotImplemented: the server does not offer this feature as configured (501; gRPC
	// UNIMPLEMENTED), e.g. repository load/unload without a model repository.
	ErrNotImplemented = errors.New("not implemented")
	// ErrTooLarge: the body or a tensor exceeds the configured Limits (413).
	ErrTooLarge = errors.New("request too large")
	// ErrOverloaded: the server sheds load; retry after the Retry-After header (429).
	ErrOverloaded = errors.New("overloaded")
	// ErrUnavailable: the model or server is not ready (starting, draining) (503, Retry-After).
	ErrUnavailable = errors.New("unavailable")
	// ErrDeadline: the request's deadline passed before it could be served (504).
	ErrDeadline = errors.New("deadline exceeded")
	// ErrInternal: the backend failed (500).
	ErrInternal = errors.New("internal error")
)

// statusTable is the single mapping from sentinel errors to HTTP status codes.
var statusTable = []struct {
	err  error
	code int
}{
	{ErrBadRequest, http.StatusBadRequest},
	{ErrModelNotFound, http.StatusNotFound},
	{ErrNotFound, http.StatusNotFound},
	{ErrMethodNotAllowed, http.StatusMethodNotAllowed},
	{ErrNotImplemented, http.StatusNotImplemented},
	{ErrTooLarge, http.StatusRequestEntityTooLarge},
	{ErrOverloaded, http.StatusTooManyRequests},
	{ErrUnavailable, http.StatusServiceUnavailable},
	{ErrDeadline, http.StatusGatewayTimeout},
	{ErrInternal, http.StatusInternalServerError},
}

// StatusOf returns the HTTP status code for err: the code of the first sentinel err wraps,
// 504 for context.DeadlineExceeded, 499 for context.Canceled (client went away), else 500.
func StatusOf(err error) int {
	for _, e := range statusTable {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	switch {
	case errors.Is(err, errContextDeadline):
		return http.StatusGatewayTimeout
	case errors.Is(err, errContextCanceled):
		return 499
	}
	return http.StatusInternalServerError
}

// sentinelFor is the inverse of statusTable, used by the Client.
func sentinelFor(code int) error {
	switch code {
	case http.StatusNotFound:
		return ErrModelNotFound
	case http.StatusRequestEntityTooLarge:
		return ErrTooLarge
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return ErrDeadline
	}
	for _, e := range statusTable {
		if e.code == code {
			return e.err
		}
	}
	if code >= 400 && code < 500 {
		return ErrBadRequest
	}
	return ErrInternal
}

// retryAfterError carries a Retry-After hint with an error.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// WithRetryAfter annotates err (typically wrapping ErrOverloaded or ErrUnavailable) with the time
// after which the client may retry; the handler sends it as the Retry-After header.
func WithRetryAfter(err error, after time.Duration) error {
	return &retryAfterError{err: err, after: after}
}

// RetryAfter returns the hint attached by WithRetryAfter (or carried by a StatusError), if any.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.after, true
	}
	var se *StatusError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		return se.RetryAfter, true
	}
	return 0, false
}

// StatusError is a non-2xx answer received by the Client. It unwraps to the sentinel error for
// its status code, so errors.Is(err, ErrOverloaded) works across the wire.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
	// Message is the "error" field of the body (or the raw body when it is not OIP JSON).
	Message string
	// RetryAfter is the parsed Retry-After header; zero when absent.
	RetryAfter time.Duration
}

// Error returns the status code and the server's message.
func (e *StatusError) Error() string {
	return "oip: HTTP " + strconv.Itoa(e.Code) + ": " + e.Message
}

// Unwrap returns the sentinel error for e.Code.
func (e *StatusError) Unwrap() error { return sentinelFor(e.Code) }
