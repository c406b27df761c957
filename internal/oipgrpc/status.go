package oipgrpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// MetadataRetryAfter is the response trailer that carries the Retry-After hint, in whole seconds,
// with ResourceExhausted (overloaded) and Unavailable answers, as the REST handler's header does.
const MetadataRetryAfter = "retry-after"

// MetadataServiceTime is the response header that carries the backend's batch service time in
// microseconds, as oip.HeaderServiceTime does over REST.
const MetadataServiceTime = "sloserve-service-time-us"

// codeTable is the single mapping from oip's sentinel errors to gRPC status codes.
var codeTable = []struct {
	err  error
	code codes.Code
}{
	{oip.ErrBadRequest, codes.InvalidArgument},
	{oip.ErrModelNotFound, codes.NotFound},
	{oip.ErrNotFound, codes.NotFound},
	{oip.ErrMethodNotAllowed, codes.Unimplemented},
	{oip.ErrNotImplemented, codes.Unimplemented},
	{oip.ErrTooLarge, codes.ResourceExhausted},
	{oip.ErrOverloaded, codes.ResourceExhausted},
	{oip.ErrUnavailable, codes.Unavailable},
	{oip.ErrDeadline, codes.DeadlineExceeded},
	{oip.ErrInternal, codes.Internal},
}

// CodeOf returns the gRPC code for err: the code of the first oip sentinel err wraps (see
// codeTable), the code of a gRPC status err carries, DeadlineExceeded and Canceled for the
// context errors, else Internal.
func CodeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	for _, e := range codeTable {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		return gs.GRPCStatus().Code()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Internal
}

// httpStatusOf is the REST status the same error would get, reported in oip.Observation.Code so
// that the owner's metrics label both protocols alike.
func httpStatusOf(err error) int {
	if err == nil {
		return 200
	}
	return oip.StatusOf(err)
}

// sentinelFor maps a gRPC code back to the oip sentinel a caller branches on. ResourceExhausted
// is ErrOverloaded when the server sent a Retry-After hint (load shedding, like HTTP 429) and
// ErrTooLarge otherwise (gRPC's own message-size limit answers ResourceExhausted too).
func sentinelFor(code codes.Code, hasRetryAfter bool) error {
	switch code {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return oip.ErrBadRequest
	case codes.NotFound:
		return oip.ErrModelNotFound
	case codes.Unimplemented:
		return oip.ErrMethodNotAllowed
	case codes.ResourceExhausted:
		if hasRetryAfter {
			return oip.ErrOverloaded
		}
		return oip.ErrTooLarge
	case codes.Unavailable:
		return oip.ErrUnavailable
	case codes.DeadlineExceeded:
		return oip.ErrDeadline
	case codes.Canceled:
		return context.Canceled
	}
	return oip.ErrInternal
}

// StatusError is a non-OK answer received by the Client. It unwraps to the oip sentinel for its
// code, so errors.Is(err, oip.ErrOverloaded) works across the wire as with the REST client, and
// status.Code(err) still returns Code.
type StatusError struct {
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the status message.
	Message string
	// RetryAfter is the server's retry hint; zero when absent.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	return "oipgrpc: " + e.Code.String() + ": " + e.Message
}

// Unwrap returns the oip sentinel for e.Code.
func (e *StatusError) Unwrap() error { return sentinelFor(e.Code, e.RetryAfter > 0) }

// GRPCStatus returns e as a gRPC status, for status.Code and status.FromError.
func (e *StatusError) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// parseRetryAfter reads a whole number of seconds; anything else is no hint.
func parseRetryAfter(v []string) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || s < 0 || s > 1<<31 {
		return 0
	}
	return time.Duration(s) * time.Second
}
