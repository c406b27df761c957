package batching

import (
	"fmt"
	"time"
)

// Policy names understood by New.
const (
	// PolicyNone dispatches every request alone, at once (no batching).
	PolicyNone = "none"
	// PolicyFixed dispatches when MaxBatch requests wait or the oldest has waited MaxWait (MArk §4.3).
	PolicyFixed = "fixed"
	// PolicyMLProxy is MLProxy's per-arrival dispatch timeout (Alg. 1) with AIMD max batch (Alg. 2).
	PolicyMLProxy = "mlproxy"
)

// Defaults that come from the papers and their original implementations
// (/work/shared/data/profiles/{mark,mlproxy}-constants.json).
const (
	// DefaultSLO is MArk's RT_max: 200 ms (MArk §5.1; UPPER_LATENCY_BOUND in modules/constants.py).
	DefaultSLO = 200 * time.Millisecond
	// DefaultMaxBatch is MArk's HANDLE_SIZE, the batch size of its CPU/GPU servers: 8 requests.
	DefaultMaxBatch = 8
	// DefaultMaxWait is sloserve's batching window for fixed when none is tuned: 50 ms, a quarter
	// of DefaultSLO (MArk tunes W per instance type with TuneFixed; it publishes no constant).
	DefaultMaxWait = 50 * time.Millisecond
	// DefaultAIMDInterval is how often MLProxy's Alg. 2 adjusts Max_BS: every 30 s.
	DefaultAIMDInterval = 30 * time.Second
	// DefaultIncStep is Alg. 2's additive increase of Max_BS: +1 request.
	DefaultIncStep = 1
	// DefaultDecMult is Alg. 2's multiplicative decrease of Max_BS: ×0.8.
	DefaultDecMult = 0.8
	// DefaultLatencyGuard is the fraction of the SLO that the end-to-end p95 must stay under
	// before Alg. 2 decreases Max_BS: 80 % (MLProxy §2.4).
	DefaultLatencyGuard = 0.8
	// DefaultTimeoutRatioThreshold is the share of timeout-dispatched batches above which Alg. 2
	// decreases Max_BS: 0.5 (default_average_timeout_ratio_threshold in SmartProxy.js).
	DefaultTimeoutRatioThreshold = 0.5
	// DefaultMinBatch is Alg. 2's lower clamp on Max_BS: 1 request (experiments' min_bs).
	DefaultMinBatch = 1
	// DefaultMaxBatchLimit is Alg. 2's upper clamp on Max_BS: 100 requests (default_bs_config.max_bs).
	DefaultMaxBatchLimit = 100
	// DefaultWindowSamples is how many latencies per batch size the monitor keeps: 1000
	// (upstream_rt_max_len in SmartProxy.js).
	DefaultWindowSamples = 1000
	// DefaultWindowAge is how far back the monitor looks: 60 s (response_time_window_s).
	DefaultWindowAge = 60 * time.Second
	// DefaultP95NoData is the upstream p95 assumed before any batch has completed: 100 ms
	// (default_p95_if_no_data_ms in SmartProxy.js).
	DefaultP95NoData = 100 * time.Millisecond
	// DefaultRefreshInterval is how long computed p95s are reused before recomputing them from
	// the windows: 10 s (monitor_stats_memoize_s in SmartMonitor.js).
	DefaultRefreshInterval = 10 * time.Second
)

// Config selects and parameterises a batching policy. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	// Policy is the policy name: "none", "fixed" or "mlproxy" (see Names).
	Policy string `yaml:"policy" json:"policy"`
	// SLO is the latency threshold a request must meet, measured from its arrival (MArk's RT_max,
	// MLProxy's SLO_T). Must be > 0.
	SLO time.Duration `yaml:"slo" json:"slo"`
	// MaxBatch is fixed's N_batch and mlproxy's initial Max_BS, in requests. Must be ≥ 1.
	MaxBatch int `yaml:"max_batch" json:"max_batch"`
	// MaxWait is fixed's W_batch: the longest the oldest request waits for a batch to fill.
	// Must be ≥ 0 and ≤ SLO.
	MaxWait time.Duration `yaml:"max_wait" json:"max_wait"`
	// MLProxy holds the parameters of the mlproxy policy; ignored by the others.
	MLProxy MLProxyConfig `yaml:"mlproxy" json:"mlproxy"`
}

// MLProxyConfig parameterises MLProxy's monitor (§2.2), queue scheduler (Alg. 1) and dynamic batch
// optimizer (Alg. 2).
type MLProxyConfig struct {
	// MinBatch is the lower clamp on Max_BS, in requests. Must be ≥ 1.
	MinBatch int `yaml:"min_batch" json:"min_batch"`
	// MaxBatchLimit is the upper clamp on Max_BS, in requests. Must be ≥ MinBatch.
	MaxBatchLimit int `yaml:"max_batch_limit" json:"max_batch_limit"`
	// IncStep is the additive increase of Max_BS per interval without violation, in requests. ≥ 1.
	IncStep int `yaml:"inc_step" json:"inc_step"`
	// DecMult is the multiplicative decrease of Max_BS on a violation; in (0, 1).
	DecMult float64 `yaml:"dec_mult" json:"dec_mult"`
	// Interval is how often (in the caller's now) Max_BS is adjusted. Must be > 0.
	Interval time.Duration `yaml:"interval" json:"interval"`
	// LatencyGuard is the fraction of SLO the end-to-end p95 must not exceed (Alg. 2's SLO target,
	// 80 % in §2.4); in (0, 1]. It is also Alg. 1's SLO_T budget: the original writes this target
	// into the proxy's maxBufferTimeoutMs, so batches are timed to finish by LatencyGuard × SLO.
	LatencyGuard float64 `yaml:"latency_guard" json:"latency_guard"`
	// TimeoutRatioThreshold is the fraction, in [0, 1], of batches dispatched by timeout above
	// which Max_BS decreases.
	TimeoutRatioThreshold float64 `yaml:"timeout_ratio_threshold" json:"timeout_ratio_threshold"`
	// WindowSamples is how many latencies each sliding window keeps (per batch size for upstream
	// latencies; in total for end-to-end latencies). Must be ≥ 1.
	WindowSamples int `yaml:"window_samples" json:"window_samples"`
	// WindowAge is the oldest latency, relative to now, a window still counts. Must be > 0.
	WindowAge time.Duration `yaml:"window_age" json:"window_age"`
	// P95NoData is the upstream p95 assumed for every batch size before any batch completed.
	// Must be ≥ 0.
	P95NoData time.Duration `yaml:"p95_no_data" json:"p95_no_data"`
	// RefreshInterval is how long per-size p95 estimates are reused before they are recomputed;
	// 0 recomputes after every observation. Must be ≥ 0.
	RefreshInterval time.Duration `yaml:"refresh_interval" json:"refresh_interval"`
}

// DefaultConfig returns the fixed policy with MArk's 200 ms SLO and batch size 8, and MLProxy's
// published defaults for the mlproxy parameters.
func DefaultConfig() Config {
	return Config{
		Policy:   PolicyFixed,
		SLO:      DefaultSLO,
		MaxBatch: DefaultMaxBatch,
		MaxWait:  DefaultMaxWait,
		MLProxy:  DefaultMLProxyConfig(),
	}
}

// DefaultMLProxyConfig returns MLProxy's defaults: +1/×0.8 every 30 s, 80 % latency guard,
// Max_BS in [1, 100], 1000-sample/60 s windows, 100 ms p95 before any data.
func DefaultMLProxyConfig() MLProxyConfig {
	return MLProxyConfig{
		MinBatch:              DefaultMinBatch,
		MaxBatchLimit:         DefaultMaxBatchLimit,
		IncStep:               DefaultIncStep,
		DecMult:               DefaultDecMult,
		Interval:              DefaultAIMDInterval,
		LatencyGuard:          DefaultLatencyGuard,
		TimeoutRatioThreshold: DefaultTimeoutRatioThreshold,
		WindowSamples:         DefaultWindowSamples,
		WindowAge:             DefaultWindowAge,
		P95NoData:             DefaultP95NoData,
		RefreshInterval:       DefaultRefreshInterval,
	}
}

// Validate reports the first field that is out of range, naming it and its value.
func (c Config) Validate() error {
	if c.Policy == "" {
		return fmt.Errorf("batching.policy: must be set, got %q", c.Policy)
	}
	if c.SLO <= 0 {
		return fmt.Errorf("batching.slo: must be > 0, got %v", c.SLO)
	}
	if c.MaxBatch < 1 {
		return fmt.Errorf("batching.max_batch: must be ≥ 1, got %d", c.MaxBatch)
	}
	if c.MaxWait < 0 || c.MaxWait > c.SLO {
		return fmt.Errorf("batching.max_wait: must be in [0, slo=%v], got %v", c.SLO, c.MaxWait)
	}
	if c.Policy == PolicyMLProxy {
		if err := c.MLProxy.Validate(); err != nil {
			return err
		}
		if c.MaxBatch < c.MLProxy.MinBatch || c.MaxBatch > c.MLProxy.MaxBatchLimit {
			return fmt.Errorf("batching.max_batch: mlproxy's initial Max_BS must be in [%d, %d], got %d",
				c.MLProxy.MinBatch, c.MLProxy.MaxBatchLimit, c.MaxBatch)
		}
	}
	return nil
}

// Validate reports the first field that is out of range, naming it and its value.
func (c MLProxyConfig) Validate() error {
	switch {
	case c.MinBatch < 1:
		return fmt.Errorf("batching.mlproxy.min_batch: must be ≥ 1, got %d", c.MinBatch)
	case c.MaxBatchLimit < c.MinBatch:
		return fmt.Errorf("batching.mlproxy.max_batch_limit: must be ≥ min_batch=%d, got %d", c.MinBatch, c.MaxBatchLimit)
	case c.IncStep < 1:
		return fmt.Errorf("batching.mlproxy.inc_step: must be ≥ 1, got %d", c.IncStep)
	case !(c.DecMult > 0 && c.DecMult < 1):
		return fmt.Errorf("batching.mlproxy.dec_mult: must be in (0, 1), got %v", c.DecMult)
	case c.Interval <= 0:
		return fmt.Errorf("batching.mlproxy.interval: must be > 0, got %v", c.Interval)
	case !(c.LatencyGuard > 0 && c.LatencyGuard <= 1):
		return fmt.Errorf("batching.mlproxy.latency_guard: must be in (0, 1], got %v", c.LatencyGuard)
	case !(c.TimeoutRatioThreshold >= 0 && c.TimeoutRatioThreshold <= 1):
		return fmt.Errorf("batching.mlproxy.timeout_ratio_threshold: must be in [0, 1], got %v", c.TimeoutRatioThreshold)
	case c.WindowSamples < 1:
		return fmt.Errorf("batching.mlproxy.window_samples: must be ≥ 1, got %d", c.WindowSamples)
	case c.WindowAge <= 0:
		return fmt.Errorf("batching.mlproxy.window_age: must be > 0, got %v", c.WindowAge)
	case c.P95NoData < 0:
		return fmt.Errorf("batching.mlproxy.p95_no_data: must be ≥ 0, got %v", c.P95NoData)
	case c.RefreshInterval < 0:
		return fmt.Errorf("batching.mlproxy.refresh_interval: must be ≥ 0, got %v", c.RefreshInterval)
	}
	return nil
}
