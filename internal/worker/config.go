package worker

import (
	"fmt"
	"net"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// Config configures a Worker and its http.Server.
type Config struct {
	// Addr is the listen address, host:port; port 0 picks a free port. Loopback by default.
	Addr string
	// ReadHeaderTimeout bounds reading a request's headers (duration).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (duration).
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to the end of the
	// response, so it must cover the largest batch's service time (duration).
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may stay idle (duration).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request header size (bytes).
	MaxHeaderBytes int
	// ShutdownTimeout is how long a graceful shutdown waits for in-flight requests (duration).
	ShutdownTimeout time.Duration
	// MaxInFlight is the number of batches that may run at once over all models (batches); more
	// are answered 429 with Retry-After. 0 means no limit.
	MaxInFlight int
	// RetryAfter is the hint sent with 429 and 503 answers (duration, rounded up to seconds).
	RetryAfter time.Duration
	// Limits bounds request bodies and tensors; zero fields take oip.DefaultLimits.
	Limits oip.Limits
	// ServerName and ServerVersion are reported by GET /v2.
	ServerName, ServerVersion string
	// MinRowTime, when > 0, makes a batch of r rows take at least r × MinRowTime (the worker
	// waits out the rest after computing): the worker serves at a nominal instance's speed
	// (1 / MinRowTime rows/s per batch slot), whatever this machine's cores. The demo's workers
	// of "100 rps nominal" run so, so that a burst above the fleet's capacity is one on a shared
	// 2-core machine too; the wait uses no CPU.
	MinRowTime time.Duration
	// CPUShare, when in (0, 1), is the fraction of one vCPU the worker may use (a function's
	// share of a vCPU: Lambda's memory / 1769 MB), enforced by duty cycle as cgroup cpu.max's
	// bandwidth control does: a batch that ran for t (after MinRowTime) is answered after
	// t / CPUShare. 0 or 1: no throttling.
	CPUShare float64
}

// Defaults of Config.
const (
	DefaultAddr              = "127.0.0.1:0"
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultServerName        = "sloserve-worker"
)

// DefaultConfig returns the configuration used by `sloserve worker` without flags.
func DefaultConfig() Config {
	return Config{
		Addr:              DefaultAddr,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		ShutdownTimeout:   DefaultShutdownTimeout,
		RetryAfter:        oip.DefaultRetryAfter,
		Limits:            oip.DefaultLimits(),
		ServerName:        DefaultServerName,
		ServerVersion:     "dev",
	}
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("worker.addr: %q is not host:port: %v", c.Addr, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read_header_timeout", c.ReadHeaderTimeout}, {"read_timeout", c.ReadTimeout},
		{"write_timeout", c.WriteTimeout}, {"idle_timeout", c.IdleTimeout},
		{"shutdown_timeout", c.ShutdownTimeout}, {"retry_after", c.RetryAfter},
	} {
		if d.v <= 0 {
			return fmt.Errorf("worker.%s: must be > 0, got %v", d.name, d.v)
		}
	}
	switch {
	case c.MaxHeaderBytes <= 0:
		return fmt.Errorf("worker.max_header_bytes: must be > 0, got %d", c.MaxHeaderBytes)
	case c.MaxInFlight < 0:
		return fmt.Errorf("worker.max_in_flight: must be >= 0, got %d", c.MaxInFlight)
	case c.ServerName == "":
		return fmt.Errorf("worker.server_name: must not be empty")
	case c.MinRowTime < 0:
		return fmt.Errorf("worker.min_row_time: must be ≥ 0, got %v", c.MinRowTime)
	case !(c.CPUShare >= 0 && c.CPUShare <= 1):
		return fmt.Errorf("worker.cpu_share: must be in [0, 1], got %v", c.CPUShare)
	}
	if err := c.Limits.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("worker.%w", err)
	}
	return nil
}
