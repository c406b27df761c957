package metrics

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// BuildInfo is the version of the running binary, exported as sloserve_build_info.
type BuildInfo struct {
	// Version is the release (e.g. "v1.2.3") or "(devel)".
	Version string
	// Commit is the VCS revision, or "unknown".
	Commit string
	// GoVersion is the toolchain that built the binary; "" means runtime.Version().
	GoVersion string
}

// RegisterRuntimeMetrics registers the Go runtime (go_*) and process (process_*) collectors and
// sloserve_build_info{version,commit,goversion} 1 on reg, what every Prometheus exporter
// serves. A collector reg already has is not an error (a caller's registry may hold them).
func RegisterRuntimeMetrics(reg prometheus.Registerer, bi BuildInfo) error {
	if bi.Version == "" {
		bi.Version = "(devel)"
	}
	if bi.Commit == "" {
		bi.Commit = "unknown"
	}
	if bi.GoVersion == "" {
		bi.GoVersion = runtime.Version()
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sloserve_build_info",
		Help: "A metric with a constant 1 labelled by the version, commit and Go version of the running sloserve.",
	}, []string{"version", "commit", "goversion"})
	info.WithLabelValues(bi.Version, bi.Commit, bi.GoVersion).Set(1)
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		info,
	} {
		if err := reg.Register(c); err != nil {
			if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
				continue
			}
			return fmt.Errorf("register runtime metrics: %w", err)
		}
	}
	return nil
}
