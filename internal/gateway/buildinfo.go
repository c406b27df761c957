package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sloserve/sloserve/internal/gateway/metrics"
)

// BuildInfo is the version of the running binary, exported as sloserve_build_info
// (metrics.BuildInfo).
type BuildInfo = metrics.BuildInfo

// RegisterRuntimeMetrics is metrics.RegisterRuntimeMetrics: the Go runtime and process
// collectors and sloserve_build_info on reg.
func RegisterRuntimeMetrics(reg prometheus.Registerer, bi BuildInfo) error {
	return metrics.RegisterRuntimeMetrics(reg, bi)
}
