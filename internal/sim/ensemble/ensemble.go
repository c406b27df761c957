package ensemble

import (
	"errors"
	"fmt"
	"github.com/sloserve/sloserve/internal/sim"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/slo"
)

// The ensemble simulator (RunEnsemble) serves classification requests that carry a
// <latency, accuracy> constraint with ensembles of models (Cocktail, NSDI'22). Unlike Run — one
// model, one shared queue — every model has its own pool of VM instances with its own request
// queue (Cocktail §4 "dedicated instance pools"); a request is fanned out to the models its
// policy selects, and its answer is the vote of the answers that arrived before its deadline,
// drawn from a per-class correctness table (ensemble.Oracle). It is a separate loop rather than
// a mode of Run so that the shared-queue engine stays exactly as it is; it reuses the event heap
// and FIFO rings of heap.go, the cost catalog and its billing rules, and every Cocktail decision
// of internal/ensemble (Select, Dynamic, ClassWeights, Majority, Popularity, Procure,
// LeastFreeSlot).

// Ensemble simulator defaults.
const (
	// DefaultEnsembleSLO is the response-latency threshold of an ensemble request: Cocktail
	// §5.2.1 counts responses over 700 ms as SLO violations, and App. C attributes up to 300 ms
	// of that to payload transfer, which the simulator does not model; so 400 ms of serving time.
	DefaultEnsembleSLO = 400 * time.Millisecond
	// DefaultEnsembleControlPeriod is how often pools are scaled: Cocktail samples SLO
	// violations every 10 s and scales reactively (§4.2.2).
	DefaultEnsembleControlPeriod = 10 * time.Second
	// DefaultAccuracyWindow is the moving window (requests) over which a request's accuracy is
	// judged against its target (§6.1: "a moving window average with size 200").
	DefaultAccuracyWindow = 200
	// DefaultReferenceType is the instance type of Table 1's latencies and packing factors.
	DefaultReferenceType = "c5.xlarge"
)

// EnsembleType is an instance type a pool may procure, with its size relative to the reference
// type: a model's packing factor on it is P_f × Scale (cocktail-constants.json
// HANDLE_SIZE_instance: c5 0.5, c5.xlarge 1, c5.2xlarge 2, c5.4xlarge 4).
type EnsembleType struct {
	// Name is the catalog name (without the /spot suffix).
	Name string
	// Scale multiplies the packing factor of the reference type; > 0.
	Scale float64
}

// DefaultEnsembleTypes returns the C5 sizes of Cocktail App. D with their HANDLE_SIZE_instance
// scales (the GPU type is left out: the data carry no GPU latencies for these models).
func DefaultEnsembleTypes() []EnsembleType {
	return []EnsembleType{{"c5.large", 0.5}, {"c5.xlarge", 1}, {"c5.2xlarge", 2}, {"c5.4xlarge", 4}}
}

// EnsembleConstraint is one request class of the workload: its constraint and its share.
type EnsembleConstraint struct {
	// Constraint is the class's <latency, accuracy> pair.
	Constraint ensemble.Constraint
	// Weight is the class's relative frequency; > 0.
	Weight float64
}

// EnsembleWorkload is what the ensemble simulator serves.
type EnsembleWorkload struct {
	// Table holds the per-model, per-class correctness rates answers are drawn from.
	Table *ensemble.ClassTable
	// Models are the servable models: Latency and PackingFactor on the reference type,
	// Accuracy (what the selector believes) normally the table's mean. Names are table rows.
	Models []ensemble.Model
	// Constraints are the request classes; each request draws one by Weight.
	Constraints []EnsembleConstraint
	// Arrivals are the request arrivals; Trace names them.
	Arrivals sim.Arrivals
	Trace    string
	// InitialRPS is the request rate at the start (the warm fleet is sized for it); PeakRPS the
	// highest one-minute rate (static pools are sized for it); requests per second.
	InitialRPS, PeakRPS float64
}

// EnsembleConfig parameterises one ensemble run.
type EnsembleConfig struct {
	// SLO is the response-latency objective; Threshold is also each request's deadline, at
	// which it is answered with the votes that have arrived (default 400 ms at 98 %).
	SLO slo.Spec
	// Seed makes the run deterministic (inputs, constraints, service noise, launch delays,
	// failures); arrivals come from the workload.
	Seed uint64
	// NoiseCV is the coefficient of variation of per-request service times; in [0, 2].
	NoiseCV float64
	// ControlPeriod is the scaling period; > 0 (default 10 s).
	ControlPeriod time.Duration
	// RequestTimeout is the longest a model's sub-request waits in its pool's queue; > 0.
	RequestTimeout time.Duration
	// Epoch is the virtual wall-clock time of offset 0 (zero = sim.DefaultEpoch).
	Epoch time.Time
	// Types are the procurement options of every pool; non-empty.
	Types []EnsembleType
	// SpotPrices holds spot price series by type name; spot types without one pay the
	// catalog's spot price.
	SpotPrices map[string]cost.PriceSeries
	// Oracle configures the answer model (correlation, confusers, label feedback); its Seed
	// and Requests are ignored (Seed comes from this config).
	Oracle ensemble.SimConfig
	// AccuracyWindow is the per-constraint moving window, in requests, whose accuracy a request
	// must reach to count as meeting its target; ≥ 1 (default 200).
	AccuracyWindow int
	// FailAt, when > 0, kills FailFraction of every pool's instances at that offset (Cocktail
	// §6.3.2's chaos experiment): their in-flight sub-requests are lost and the autoscaler
	// replaces them.
	FailAt time.Duration
	// FailFraction is the fraction of each pool's live instances killed at FailAt, in [0, 1].
	FailFraction float64
	// Progress, when set, is called now and then with the virtual time reached.
	Progress func(reached time.Duration)
}

// DefaultEnsembleConfig returns the defaults: 400 ms at 98 %, seed 1, noise CV 0.05, 10 s
// control period, 30 s queue timeout, the C5 types, the ensemble simulator's answer model,
// a 200-request accuracy window and no failures.
func DefaultEnsembleConfig() EnsembleConfig {
	return EnsembleConfig{
		SLO:            slo.Spec{Threshold: DefaultEnsembleSLO, Target: 0.98},
		Seed:           1,
		NoiseCV:        sim.DefaultNoiseCV,
		ControlPeriod:  DefaultEnsembleControlPeriod,
		RequestTimeout: sim.DefaultRequestTimeout,
		Epoch:          sim.DefaultEpoch,
		Types:          DefaultEnsembleTypes(),
		Oracle:         ensemble.DefaultSimConfig(1, 1),
		AccuracyWindow: DefaultAccuracyWindow,
	}
}

// Validate reports the first field that is out of range.
func (c EnsembleConfig) Validate() error {
	if err := c.SLO.Validate(); err != nil {
		return err
	}
	switch {
	case !(c.NoiseCV >= 0 && c.NoiseCV <= 2):
		return fmt.Errorf("ensemble_sim.noise_cv: must be in [0, 2], got %v", c.NoiseCV)
	case c.ControlPeriod <= 0:
		return fmt.Errorf("ensemble_sim.control_period: must be > 0, got %v", c.ControlPeriod)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("ensemble_sim.request_timeout: must be > 0, got %v", c.RequestTimeout)
	case len(c.Types) == 0:
		return errors.New("ensemble_sim.types: must not be empty")
	case c.AccuracyWindow < 1:
		return fmt.Errorf("ensemble_sim.accuracy_window: must be ≥ 1, got %d", c.AccuracyWindow)
	case c.FailAt < 0:
		return fmt.Errorf("ensemble_sim.fail_at: must be ≥ 0, got %v", c.FailAt)
	case !(c.FailFraction >= 0 && c.FailFraction <= 1):
		return fmt.Errorf("ensemble_sim.fail_fraction: must be in [0, 1], got %v", c.FailFraction)
	}
	for i, t := range c.Types {
		if t.Name == "" || !(t.Scale > 0) || math.IsInf(t.Scale, 0) {
			return fmt.Errorf("ensemble_sim.types[%d]: need a name and a scale > 0, got %+v", i, t)
		}
	}
	o := c.Oracle
	o.Requests, o.Rate = 1, 1
	return o.Validate()
}

// Validate reports the first problem of w against the table.
func (w EnsembleWorkload) Validate() error {
	switch {
	case w.Table == nil:
		return errors.New("ensemble workload: no class table")
	case len(w.Models) == 0:
		return errors.New("ensemble workload: no models")
	case len(w.Constraints) == 0:
		return errors.New("ensemble workload: no constraints")
	case w.Arrivals == nil:
		return errors.New("ensemble workload: no arrivals")
	case !(w.InitialRPS >= 0) || !(w.PeakRPS >= 0):
		return fmt.Errorf("ensemble workload: rates must be ≥ 0, got initial %v peak %v", w.InitialRPS, w.PeakRPS)
	}
	seen := map[string]bool{}
	for _, m := range w.Models {
		if err := m.Validate(); err != nil {
			return err
		}
		if w.Table.ModelIndex(m.Name) < 0 {
			return fmt.Errorf("ensemble workload: model %q is not in the class table", m.Name)
		}
		if seen[m.Name] {
			return fmt.Errorf("ensemble workload: duplicate model %q", m.Name)
		}
		seen[m.Name] = true
	}
	for i, c := range w.Constraints {
		if err := c.Constraint.Validate(); err != nil {
			return fmt.Errorf("ensemble workload: constraints[%d]: %w", i, err)
		}
		if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
			return fmt.Errorf("ensemble workload: constraints[%d].weight: must be > 0, got %v", i, c.Weight)
		}
	}
	return nil
}

// EnsembleResult is the outcome of one ensemble run.
type EnsembleResult struct {
	// Summary is the shared Summary: Accuracy is the fraction of answered requests whose vote
	// was right; Extra holds accuracy_target_met_fraction, mean_models (sub-requests per
	// request), mean_votes (votes per answered request), partial_answers, cancelled_subrequests,
	// lost_subrequests, failed_instances, spot_interruptions, launches, terminations,
	// vm_instance_seconds, mean_vm_instances, and per constraint accuracy_c<i> and
	// target_met_c<i>.
	Summary slo.Summary
	// Latency is the latency histogram of answered requests.
	Latency *slo.Histogram
	// Pools lists each model's pool: instance-seconds, cost and sub-requests served.
	Pools []PoolStats
	// Selections lists, per constraint, the initial (O1/O2 or full) ensemble and the mean
	// ensemble size over the requests of that constraint.
	Selections []ConstraintStats
}

// PoolStats is one model pool's share of a run.
type PoolStats struct {
	Model           string  `json:"model"`
	InstanceSeconds float64 `json:"instance_seconds"`
	CostUSD         float64 `json:"cost_usd"`
	Served          int64   `json:"served"`
	MaxInstances    int     `json:"max_instances"`
}

// ConstraintStats is one request class's share of a run.
type ConstraintStats struct {
	LatencyMS      float64  `json:"latency_ms"`
	Target         float64  `json:"target"`
	Candidates     []string `json:"candidates"`
	Requests       int64    `json:"requests"`
	Accuracy       float64  `json:"accuracy"`
	TargetMet      float64  `json:"target_met_fraction"`
	MeanModels     float64  `json:"mean_models"`
	SelectionSteps int      `json:"selection_changes"`
}
