package metrics

import "net/http"

// Outcome labels for sloserve_requests_total: a bounded set derived from the status code.
const (
	OutcomeOK         = "ok"
	OutcomeBadRequest = "bad_request"
	OutcomeRejected   = "rejected"
	OutcomeTimeout    = "timeout"
	OutcomeBackend    = "backend_error"
	OutcomeUnavail    = "unavailable"
	OutcomeCanceled   = "canceled"
	OutcomeOther      = "error"
)

// Outcomes are every outcome label.
var Outcomes = []string{OutcomeOK, OutcomeBadRequest, OutcomeRejected, OutcomeTimeout, OutcomeBackend,
	OutcomeUnavail, OutcomeCanceled, OutcomeOther}

// OutcomeOf maps an answer's HTTP status to its outcome label.
func OutcomeOf(code int) string {
	switch {
	case code == http.StatusOK:
		return OutcomeOK
	case code == http.StatusTooManyRequests:
		return OutcomeRejected
	case code == http.StatusGatewayTimeout:
		return OutcomeTimeout
	case code == http.StatusServiceUnavailable:
		return OutcomeUnavail
	case code == 499:
		return OutcomeCanceled
	case code == http.StatusBadGateway, code == http.StatusInternalServerError:
		return OutcomeBackend
	case code >= 400 && code < 500:
		return OutcomeBadRequest
	}
	return OutcomeOther
}
