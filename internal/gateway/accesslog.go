package gateway

import (
	"net/http"
	"strings"
)

// routeOf names a request's route for the access log, with a bounded set of names, and the
// model it addresses (as given in the path; the log is not a metric, so any value is fine).
func routeOf(r *http.Request) (route, model string) {
	p := r.URL.Path
	switch {
	case p == "/metrics":
		return "metrics", ""
	case p == "/v2/workers/metrics":
		return "workers_metrics", ""
	case strings.HasPrefix(p, "/v2/health/"):
		return "health", ""
	case p == "/v2" || p == "/v2/":
		return "server_metadata", ""
	case strings.HasPrefix(p, "/v2/repository"):
		return "repository", ""
	case strings.HasPrefix(p, "/v2/models/"):
		rest := strings.TrimPrefix(p, "/v2/models/")
		model, tail, _ := strings.Cut(rest, "/")
		if strings.HasPrefix(tail, "versions/") {
			_, tail, _ = strings.Cut(strings.TrimPrefix(tail, "versions/"), "/")
		}
		switch tail {
		case "infer":
			return "infer", model
		case "ready":
			return "model_ready", model
		case "":
			return "model_metadata", model
		}
		return "model_" + strings.ReplaceAll(tail, "/", "_"), model
	case strings.HasPrefix(p, "/v1/"):
		return "v1", ""
	case strings.HasPrefix(p, "/ui"):
		return "ui", ""
	case p == "/ping" || p == "/invocations":
		return "sagemaker", ""
	}
	return "other", ""
}
