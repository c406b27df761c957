package ensemble

import (
	"fmt"
	"math"
	"time"
)

// Paper defaults (Cocktail, NSDI'22), kept as named values rather than literals in code.
const (
	// DefaultInterval is the dynamic policy's monitoring interval (§6.3.1: 30 s balances
	// accuracy loss < 0.2 % against ensemble size).
	DefaultInterval = 30 * time.Second
	// DefaultAccuracyMargin is Acc_margin (§4.1: a 0.2 % tolerance on Acc_target).
	DefaultAccuracyMargin = 0.002
	// DefaultLatencyMargin is Lat_margin (§4.1: a 5 ms tolerance on Lat_target).
	DefaultLatencyMargin = 5 * time.Millisecond
	// DefaultPopularityWindow is how far back importance weights count requests (§5.1: 5 min).
	DefaultPopularityWindow = 5 * time.Minute
	// DefaultIdleTimeout is the idle time after which an unused instance of a pool is recycled
	// (§4.2.1: 10 min).
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultPruneConfidence is the one-sided z of the Wilson lower bound the dynamic policy
	// puts on an interval's accuracy before pruning: 1.645, 95 % confidence. A 30 s interval at
	// 50 req/s holds 1,500 labelled requests, whose accuracy near 0.9 carries ±1.5 points of
	// sampling noise at 95 %: without the bound a lucky interval prunes.
	DefaultPruneConfidence = 1.645
	// DefaultMaxExhaustive bounds the exhaustive O2 search: 2^16 subsets take a few ms.
	DefaultMaxExhaustive = 16
)

// Config holds the tunables of Cocktail's selection and scaling decisions.
type Config struct {
	// Interval is the dynamic selection's monitoring interval; > 0 (default 30 s).
	Interval time.Duration
	// AccuracyMargin is Acc_margin as a fraction: O1/O2 accept ensembles whose predicted accuracy
	// is ≥ target − margin, and the dynamic policy prunes only when the interval's accuracy is
	// ≥ target + margin; in [0, 1) (default 0.002).
	AccuracyMargin float64
	// LatencyMargin is Lat_margin: a model is a candidate when its latency is ≤ target + margin;
	// ≥ 0 (default 5 ms).
	LatencyMargin time.Duration
	// PopularityWindow is the sliding window of importance weights; > 0 (default 5 min).
	PopularityWindow time.Duration
	// IdleTimeout is how long an instance of a model pool may stay without work before it is
	// recycled; > 0 (default 10 min). The planner applies it; it is here so one config carries
	// every Cocktail constant.
	IdleTimeout time.Duration
	// PruneConfidence is the one-sided z score of the Wilson lower bound on the interval's
	// accuracy that must reach target + AccuracyMargin before the dynamic policy prunes; ≥ 0
	// (default 1.645, 95 %; 0 prunes on the point estimate, as Alg. 1 does).
	PruneConfidence float64
	// ErrorCorrelation is the latent correlation ρ of the members' correctness with which O2
	// predicts an ensemble's accuracy (EnsembleAccuracyCorrelated; fit it on validation answers
	// with FitCorrelation); in [0, 1) (default 0: independent errors, the paper's formula, which
	// over-predicts real ensembles).
	ErrorCorrelation float64
	// MaxExhaustive is the largest candidate count for which O2 enumerates every subset; larger
	// pools use a greedy search; in [1, 24] (default 16).
	MaxExhaustive int
	// DropOne is Clipper-X's selection (Cocktail §5.2: "a simple model selection (drop one model
	// at a time) that does not utilize the mode-based policy"): the dynamic policy prunes one
	// model whenever the interval's accuracy bound reaches the threshold, whatever the vote
	// mode, instead of pruning to ⌊N/2⌋+1 when the mode allows it. false is Cocktail's Alg. 1.
	DropOne bool
}

// DefaultConfig returns the paper's settings.
func DefaultConfig() Config {
	return Config{
		Interval:         DefaultInterval,
		AccuracyMargin:   DefaultAccuracyMargin,
		LatencyMargin:    DefaultLatencyMargin,
		PopularityWindow: DefaultPopularityWindow,
		IdleTimeout:      DefaultIdleTimeout,
		MaxExhaustive:    DefaultMaxExhaustive,
		PruneConfidence:  DefaultPruneConfidence,
	}
}

// Validate reports the first field of c that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Interval <= 0:
		return fmt.Errorf("ensemble.interval: must be > 0, got %v", c.Interval)
	case !(c.AccuracyMargin >= 0 && c.AccuracyMargin < 1):
		return fmt.Errorf("ensemble.accuracy_margin: must be in [0, 1), got %v", c.AccuracyMargin)
	case c.LatencyMargin < 0:
		return fmt.Errorf("ensemble.latency_margin: must be >= 0, got %v", c.LatencyMargin)
	case c.PopularityWindow <= 0:
		return fmt.Errorf("ensemble.popularity_window: must be > 0, got %v", c.PopularityWindow)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("ensemble.idle_timeout: must be > 0, got %v", c.IdleTimeout)
	case !(c.PruneConfidence >= 0) || math.IsInf(c.PruneConfidence, 0):
		return fmt.Errorf("ensemble.prune_confidence: must be >= 0, got %v", c.PruneConfidence)
	case !(c.ErrorCorrelation >= 0 && c.ErrorCorrelation < 1):
		return fmt.Errorf("ensemble.error_correlation: must be in [0, 1), got %v", c.ErrorCorrelation)
	case c.MaxExhaustive < 1 || c.MaxExhaustive > 24:
		return fmt.Errorf("ensemble.max_exhaustive: must be in [1, 24], got %d", c.MaxExhaustive)
	}
	return nil
}
