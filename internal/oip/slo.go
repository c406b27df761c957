package oip

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Request parameters that override the SLO of one request.
const (
	// ParamTimeout is Triton's per-request timeout, in microseconds.
	ParamTimeout = "timeout"
	// ParamLatencyMS is a per-request latency target in milliseconds (Cocktail's constraint).
	ParamLatencyMS = "latency_ms"
	// ParamAccuracy is a per-request accuracy target in (0, 1] for ensembles (Cocktail).
	ParamAccuracy = "accuracy"
)

// RequestSLO is the per-request SLO override carried in an inference request's parameters. Zero
// fields mean "not given; use the model's SLO".
type RequestSLO struct {
	// Timeout is the time after arrival at which the request is useless (from "timeout", µs).
	Timeout time.Duration
	// Latency is the latency target (from "latency_ms", ms).
	Latency time.Duration
	// Accuracy is the minimum accuracy, a fraction in (0, 1] (from "accuracy").
	Accuracy float64
}

// Bound returns the tighter of Timeout and Latency, or 0 when neither is given.
func (s RequestSLO) Bound() time.Duration {
	switch {
	case s.Timeout == 0:
		return s.Latency
	case s.Latency == 0:
		return s.Timeout
	}
	return min(s.Timeout, s.Latency)
}

// ParseSLO reads the SLO override parameters of p. Values may be JSON numbers or numeric strings;
// a negative, zero, non-numeric or out-of-range value is an error wrapping ErrBadRequest.
func ParseSLO(p Parameters) (RequestSLO, error) {
	var s RequestSLO
	if v, ok := p[ParamTimeout]; ok {
		us, err := paramFloat(v)
		if err != nil || us <= 0 || us > float64(math.MaxInt64/int64(time.Microsecond)) {
			return s, fmt.Errorf("%w: parameter %q must be a positive number of microseconds, got %v", ErrBadRequest, ParamTimeout, v)
		}
		s.Timeout = time.Duration(us * float64(time.Microsecond))
	}
	if v, ok := p[ParamLatencyMS]; ok {
		ms, err := paramFloat(v)
		if err != nil || ms <= 0 || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
			return s, fmt.Errorf("%w: parameter %q must be a positive number of milliseconds, got %v", ErrBadRequest, ParamLatencyMS, v)
		}
		s.Latency = time.Duration(ms * float64(time.Millisecond))
	}
	if v, ok := p[ParamAccuracy]; ok {
		a, err := paramFloat(v)
		if err != nil || !(a > 0 && a <= 1) {
			return s, fmt.Errorf("%w: parameter %q must be a fraction in (0, 1], got %v", ErrBadRequest, ParamAccuracy, v)
		}
		s.Accuracy = a
	}
	return s, nil
}

func paramFloat(v any) (float64, error) {
	var f float64
	var err error
	switch x := v.(type) {
	case json.Number:
		f, err = strconv.ParseFloat(string(x), 64)
	case string:
		f, err = strconv.ParseFloat(x, 64)
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	default:
		return 0, fmt.Errorf("not a number: %T", v)
	}
	if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		err = fmt.Errorf("not finite")
	}
	return f, err
}
