package sim

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
)

// BenchmarkFixedBatching runs the fixed policy (static fleet, MArk §4.3 batching) on the default
// model with 1M Poisson arrivals at 2,000 rps; it reports simulated requests per wall second.
func BenchmarkFixedBatching(b *testing.B) {
	cat := cost.DefaultCatalog()
	cfg := DefaultConfig()
	env := Env{Catalog: &cat, Model: DefaultModel(), SLO: cfg.SLO, Load: LoadStats{MeanRPS: 2000, PeakRPS: 2000}}
	const n = 1_000_000
	var total int64
	cpu0 := cpuTime()
	for b.Loop() {
		p, err := New("fixed", env)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Run(context.Background(), cfg, &cat, env.Model, p, newPoisson(2000, n, 1))
		if err != nil {
			b.Fatal(err)
		}
		total += res.Summary.Requests
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "requests/s")
	// On a shared machine wall time includes waiting for a core; CPU time is one core's work.
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(total)/cpu.Seconds(), "requests/cpu-s")
	}
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
