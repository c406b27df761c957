package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/slo"
)

// Engine defaults.
const (
	// DefaultNoiseCV is the coefficient of variation of simulated service times. BATCH (§VI)
	// measured CV ≤ 0.1 on Lambda; VMs are steadier, so 0.05.
	DefaultNoiseCV = 0.05
	// DefaultSamplePeriod is how often load is sampled and the fleet scaler asked: 1 s, fine
	// enough for Knative's 6 s panic window and MArk's 5 s P_s.
	DefaultSamplePeriod = time.Second
	// DefaultHistoryLen is how many samples a scaler sees: 15 min at 1 s, SageMaker's longest alarm.
	DefaultHistoryLen = 900
	// DefaultSeriesPeriod is the time-series resolution: 1 min.
	DefaultSeriesPeriod = time.Minute
	// DefaultRequestTimeout is how long a request may wait in a queue before it fails (a gateway
	// timeout); it bounds queues of an overloaded fleet.
	DefaultRequestTimeout = 30 * time.Second
)

// ErrMissBudget is Run's error when more requests than Config.MissBudget missed the SLO.
var ErrMissBudget = errors.New("sim: miss budget exceeded")

// ErrCostBudget is Run's error when the bill passed Config.CostBudget.
var ErrCostBudget = errors.New("sim: cost budget exceeded")

// DefaultEpoch is the virtual wall-clock time at which runs start (the Twitter trace's day).
var DefaultEpoch = time.Date(2017, 5, 25, 0, 0, 0, 0, time.UTC)

// Config parameterises one simulation run.
type Config struct {
	// SLO is the latency objective requests are judged against.
	SLO slo.Spec
	// Seed makes the run deterministic: the same seed, inputs and policy give the same Summary.
	Seed uint64
	// NoiseCV is the coefficient of variation of service times (log-normal, mean preserved);
	// 0 makes service times exactly the profile's. Must be in [0, 2].
	NoiseCV float64
	// NoiseFactors, when not empty, replaces the log-normal noise by an empirical distribution:
	// each service time is the profile's times a factor drawn uniformly from NoiseFactors
	// (measured round trips over their batch size's mean, e.g. `sloserve validate`'s profile,
	// whose tail a log-normal misses on a shared machine). Each must be finite and > 0.
	NoiseFactors []float64
	// LaunchNoiseFactors, when not empty, replaces NoiseFactors for a batch dispatched while an
	// instance is launching: on a host whose workers share its cores (`sloserve validate`'s
	// live stack) a launch — process start and model load — slows the serving workers and the
	// gateway; the factors are round trips measured during launches over the batch-1 median.
	// Each must be finite and > 0.
	LaunchNoiseFactors []float64
	// Stalls is a whole-host stall process (the zero value: none): Poisson pauses of every
	// VM batch in flight and of dispatch (queued requests wait), so that the misses a shared host's
	// scheduler makes cluster as they do live (issue #16, `sloserve validate`).
	Stalls Stalls
	// SamplePeriod is the load-sampling and scaler period. Must be > 0.
	SamplePeriod time.Duration
	// HistoryLen is the number of samples a scaler's Snapshot holds. Must be ≥ 1.
	HistoryLen int
	// SeriesPeriod is the period of the time series in the Result; 0 disables the series.
	SeriesPeriod time.Duration
	// RequestTimeout is the longest a request waits in a queue before failing. Must be > 0.
	RequestTimeout time.Duration
	// Epoch is the virtual wall-clock time of offset 0.
	Epoch time.Time
	// SpotPrices holds spot price series by instance type name (e.g. from cost.ReadSpotPrices);
	// types without one pay their catalog spot price.
	SpotPrices map[string]cost.PriceSeries
	// Interruptions are scheduled spot interruptions (MArk §5.3, Fig. 9d), in ascending At.
	Interruptions []Interruption
	// Trace names the arrival trace in the Summary.
	Trace string
	// MissBudget, when > 0, stops the run with ErrMissBudget at the first load sample after more
	// than this many requests missed the SLO (late, failed or rejected): a tuner's candidate
	// that can no longer meet the SLO stops early (issue #17).
	MissBudget int64
	// CostBudget, when > 0, stops the run with ErrCostBudget at the first load sample after
	// the bill so far (a lower bound of the final one) exceeds it: a tuner's candidate that can
	// no longer be the cheapest stops early (issue #17, docs/scoreboard.md "Speed").
	CostBudget float64
	// Twins bill the run again as the runs of policies that launch the same machines under other
	// type names (Twin), each with its own cost budget; Result.Twins holds their outcomes, and
	// the budgets' early stops are reported in Result.Stop and TwinResult.Stop instead of Run's
	// error.
	Twins []Twin
	// Progress, when set, is called now and then with the virtual time reached.
	Progress func(reached time.Duration)
}

// DefaultConfig returns the engine defaults with the default SLO and seed 1.
func DefaultConfig() Config {
	return Config{
		SLO:            slo.DefaultSpec(),
		Seed:           1,
		NoiseCV:        DefaultNoiseCV,
		SamplePeriod:   DefaultSamplePeriod,
		HistoryLen:     DefaultHistoryLen,
		SeriesPeriod:   DefaultSeriesPeriod,
		RequestTimeout: DefaultRequestTimeout,
		Epoch:          DefaultEpoch,
	}
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if err := c.SLO.Validate(); err != nil {
		return err
	}
	switch {
	case !(c.NoiseCV >= 0 && c.NoiseCV <= 2) || math.IsNaN(c.NoiseCV):
		return fmt.Errorf("sim.noise_cv: must be in [0, 2], got %v", c.NoiseCV)
	case !validFactors(c.NoiseFactors):
		return fmt.Errorf("sim.noise_factors: each must be finite and > 0")
	case !validFactors(c.LaunchNoiseFactors):
		return fmt.Errorf("sim.launch_noise_factors: each must be finite and > 0")
	case c.SamplePeriod <= 0:
		return fmt.Errorf("sim.sample_period: must be > 0, got %v", c.SamplePeriod)
	case c.HistoryLen < 1:
		return fmt.Errorf("sim.history_len: must be ≥ 1, got %d", c.HistoryLen)
	case c.SeriesPeriod < 0:
		return fmt.Errorf("sim.series_period: must be ≥ 0, got %v", c.SeriesPeriod)
	case c.MissBudget < 0:
		return fmt.Errorf("sim.miss_budget: must be ≥ 0, got %d", c.MissBudget)
	case !(c.CostBudget >= 0) || math.IsInf(c.CostBudget, 0):
		return fmt.Errorf("sim.cost_budget: must be finite and ≥ 0, got %v", c.CostBudget)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("sim.request_timeout: must be > 0, got %v", c.RequestTimeout)
	}
	if err := c.Stalls.validate(); err != nil {
		return err
	}
	for i, t := range c.Twins {
		switch {
		case t.Type == nil:
			return fmt.Errorf("sim.twins[%d].type: must be set", i)
		case !(t.CostBudget >= 0) || math.IsInf(t.CostBudget, 0):
			return fmt.Errorf("sim.twins[%d].cost_budget: must be finite and ≥ 0, got %v", i, t.CostBudget)
		}
	}
	for i, in := range c.Interruptions {
		switch {
		case in.At < 0 || (i > 0 && in.At < c.Interruptions[i-1].At):
			return fmt.Errorf("sim.interruptions[%d].at: must be ≥ 0 and ≥ the previous one's, got %v", i, in.At)
		case !(in.Fraction > 0 && in.Fraction <= 1):
			return fmt.Errorf("sim.interruptions[%d].fraction: must be in (0, 1], got %v", i, in.Fraction)
		}
	}
	return nil
}

// validFactors reports whether every factor is finite and > 0.
func validFactors(fs []float64) bool {
	for _, f := range fs {
		if !(f > 0) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

// Interruption is a scheduled spot interruption: at offset At the cloud sends the interruption
// notice (Catalog.Spot.Notice ahead of the reclaim) to Fraction of the ready spot instances, the
// oldest first, as MArk §5.3 interrupted 20, 40 and 80 % of a 20-instance fleet by hand.
type Interruption struct {
	// At is the offset from the start of the run; the notice goes out at the first load
	// sample at or after it (every SamplePeriod).
	At time.Duration
	// Fraction is the share of the ready spot fleet interrupted, in (0, 1]; the count is
	// rounded to the nearest instance.
	Fraction float64
}
