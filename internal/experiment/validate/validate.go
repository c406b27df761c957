// Package validate measures whether the simulator predicts the live system (issue #16 item 6,
// `sloserve validate`): it profiles a bundled model on this machine's worker processes, replays
// a trace segment, compressed in time and scaled in rate to what the machine serves, through
// the live serving stack (internal/app: gateway, real workers, the controller running the
// policy) and through the simulator (internal/sim) with the measured profile, the same policy
// built through the same registry with the same options, the same seed and the same arrivals;
// and reports both Summaries side by side.
//
// The simulator's world is the live one (controller.LiveEnv): one VM type, no serverless tier
// on either side until the live providers have one (Options.Serverless), the live clock's
// preset. What the live stack does that a policy does not decide is given to the simulator as
// the live stack does it: the VM queue's batching is the gateway's (the model's batching
// config), the dispatcher is the gateway's, the controller's bounds (min, max instances, batch
// clamps) wrap the scaler (controller.Model.Bound), the initial fleet is the configured
// instances, the launch delay is the measured one (median and log-spread), and each batch's
// service time is the measured round trip through the gateway to a worker.
package validate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/slo"
)

// Policies validate runs by default: the VM-tier policies the live controller runs.
var Policies = []string{"mark", config.ControllerTargetTracking, "sloserve"}

// Defaults of Options.
const (
	DefaultModel     = "mlp256"
	DefaultWall      = 90 * time.Second
	DefaultWorkerRPS = 50.0
	DefaultMax       = 4
	DefaultSLO       = 100 * time.Millisecond
	DefaultSeed      = 1
)

// Options configure one validation.
type Options struct {
	// Model is the bundled model served (default mlp256).
	Model string
	// Policies are the controller policies validated (default Policies).
	Policies []string
	// Segments are the trace segments replayed (at least one).
	Segments []Segment
	// Wall is how long each live replay lasts (the segment is compressed into it; default 90 s).
	Wall time.Duration
	// WorkerRPS is the nominal rate one worker serves, requests/s: the capacity both sides plan
	// with (instance_type.rps). The bundled models serve thousands of requests per second on a
	// core, more than the gateway and load generator of a 2-core machine can send, so the fleet's
	// capacity is nominal, as `sloserve demo --controller` makes it (default 50; MArk needs
	// 1/WorkerRPS within half the SLO).
	WorkerRPS float64
	// MaxInstances bounds the fleet (controller.max_instances, default 4); the segment's peak is
	// scaled to 80 % of MaxInstances × WorkerRPS.
	MaxInstances int
	// SLO is the latency objective (default 100 ms for 98 %).
	SLO slo.Spec
	// Seed drives the arrivals and the simulator (default 1).
	Seed uint64
	// Runtime and ORTLib are the workers' runtime and libonnxruntime.so (config.workers).
	Runtime, ORTLib string
	// WorkerBinary is the executable run as `WorkerBinary worker ...` ("" = this executable),
	// and WorkerEnv is added to the workers' environment.
	WorkerBinary string
	WorkerEnv    []string
	// LiveRuns is how many times each policy × segment is replayed live (default 1). With more,
	// Result.Live is the first run and Result.LiveAttainments holds every run's attainment, so
	// the live run's own spread (a shared machine's load) is reported beside the simulator's
	// error.
	LiveRuns int
	// ProfileReps is how many timed round trips the profile takes per batch size (default 60).
	ProfileReps int
	// Serverless enables the serverless tier on both sides. The live providers have no function
	// tier yet (issue #16 items 1–3), so it is refused for now; when they do, the live config
	// enables it and the simulator's model gets the tier's measured profile.
	Serverless bool
	// Log receives the stack's lifecycle events; Progress one line per step (nil: discarded).
	Log      *slog.Logger
	Progress io.Writer
}

// Result is one policy × trace: the live run's Summary and the simulator's, built once
// (slo.Summary) and filled by each side. Extra of both holds instance_seconds, launches,
// terminations, spills (requests the VM tier handed to another tier), rejected_429.
type Result struct {
	Policy string      `json:"policy"`
	Trace  string      `json:"trace"`
	Live   slo.Summary `json:"live"`
	Sim    slo.Summary `json:"sim"`
	// SimNoStalls is the simulator without the measured stall process and with every
	// round trip in the noise factors (the model before the stall probe), when the probe saw
	// stalls: what the stall process changes, on the same arrivals and seed.
	SimNoStalls *slo.Summary `json:"sim_without_stalls,omitempty"`
	// LiveStalls is what the stall probe measured on the host during the (first) live replay:
	// the simulator's stall process for this row (the host's stalls as they were during the
	// run, measured beside it, not fitted to its outcome; the profile's 10 s sample misses the
	// rare long ones).
	LiveStalls StallsMeasured `json:"live_stalls"`
	// SimSeeds are the simulator with the stall process under further seeds (the same arrivals;
	// other stall instants and noise draws): a reactive launch on a cluster of misses (MArk's
	// SLO monitor) is a threshold event, and these show how often the simulator takes it.
	SimSeeds []SeedOutcome `json:"sim_seeds,omitempty"`
	// LiveAttainments is every live run's attainment (Options.LiveRuns; Live is the first).
	LiveAttainments []float64 `json:"live_attainments,omitempty"`
	// LiveInstanceSeconds is every live run's instance-seconds, beside LiveAttainments.
	LiveInstanceSeconds []float64 `json:"live_instance_seconds,omitempty"`
}

// SeedOutcome is one simulated run under another seed.
type SeedOutcome struct {
	Seed            uint64  `json:"seed"`
	Attainment      float64 `json:"slo_attainment"`
	InstanceSeconds float64 `json:"instance_seconds"`
	Launches        float64 `json:"launches"`
}

// simSeeds is how many further seeds the simulator runs with the stall process on.
const simSeeds = 4

// Report is a whole validation: the measured profile and one Result per policy × segment.
type Report struct {
	Profile Measured `json:"profile"`
	Results []Result `json:"results"`
}

// withDefaults fills zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if len(o.Policies) == 0 {
		o.Policies = slices.Clone(Policies)
	}
	if o.Wall == 0 {
		o.Wall = DefaultWall
	}
	if o.WorkerRPS == 0 {
		o.WorkerRPS = DefaultWorkerRPS
	}
	if o.MaxInstances == 0 {
		o.MaxInstances = DefaultMax
	}
	if o.SLO == (slo.Spec{}) {
		o.SLO = slo.Spec{Threshold: DefaultSLO, Target: 0.98}
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Runtime == "" {
		o.Runtime = models.RuntimeNative
	}
	if o.LiveRuns == 0 {
		o.LiveRuns = 1
	}
	if o.ProfileReps == 0 {
		o.ProfileReps = 60
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch {
	case o.Serverless:
		return o, errors.New("validate: --serverless: the live providers have no function tier yet (issue #16 items 1-3); validate the VM tier")
	case len(o.Segments) == 0:
		return o, errors.New("validate: --traces: at least one segment is required")
	case o.Wall < 5*time.Second || o.Wall > time.Hour:
		return o, fmt.Errorf("validate: --duration: must be in [5s, 1h], got %v", o.Wall)
	case !(o.WorkerRPS > 0):
		return o, fmt.Errorf("validate: --worker-rps: must be > 0, got %v", o.WorkerRPS)
	case o.MaxInstances < 1 || o.MaxInstances > 16:
		return o, fmt.Errorf("validate: --max-instances: must be in [1, 16], got %d", o.MaxInstances)
	case o.LiveRuns < 1 || o.LiveRuns > 10:
		return o, fmt.Errorf("validate: --live-runs: must be in [1, 10], got %d", o.LiveRuns)
	case o.ProfileReps < 3:
		return o, fmt.Errorf("validate: profile reps: must be ≥ 3, got %d", o.ProfileReps)
	}
	for _, p := range o.Policies {
		if _, _, ok := config.PolicyName(p); !ok || p == config.ControllerNone {
			return o, fmt.Errorf("validate: --policies: unknown %q (have %v)", p, config.ControllerPolicies())
		}
	}
	return o, o.SLO.Validate()
}

// Check reports the first option that is out of range, naming its flag.
func Check(o Options) error {
	_, err := o.withDefaults()
	return err
}

// Run profiles the model, then replays every segment under every policy live and simulated.
func Run(ctx context.Context, o Options) (Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Report{}, err
	}
	fmt.Fprintf(o.Progress, "profiling %s on this machine's workers (%s runtime) ...\n", o.Model, o.Runtime)
	prof, err := MeasureProfile(ctx, o)
	if err != nil {
		return Report{}, err
	}
	fmt.Fprintf(o.Progress, "profile: %s\n", prof)
	rep := Report{Profile: prof}
	for _, seg := range o.Segments {
		arr, err := seg.Arrivals(o)
		if err != nil {
			return rep, err
		}
		for _, p := range o.Policies {
			fmt.Fprintf(o.Progress, "%s on %s: %d requests over %v (×%.0f compression), live ...\n", p, seg.Name, len(arr.Times), arr.Wall, arr.Compression)
			res := Result{Policy: p, Trace: seg.Name}
			for i := range o.LiveRuns {
				live, stalls, err := runLive(ctx, o, p, prof, arr)
				if err != nil {
					return rep, fmt.Errorf("validate %s on %s: live run %d: %w", p, seg.Name, i+1, err)
				}
				if i == 0 {
					res.Live, res.LiveStalls = live, stalls
				}
				res.LiveAttainments = append(res.LiveAttainments, live.SLOAttainment)
				res.LiveInstanceSeconds = append(res.LiveInstanceSeconds, live.Extra["instance_seconds"])
			}
			if err := simulate(ctx, o, prof, arr, &res); err != nil {
				return rep, fmt.Errorf("validate %s on %s: %w", p, seg.Name, err)
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return rep, nil
}

// simulate fills res's simulated side: the simulator with the stall process measured during the
// live run, and, when it saw stalls, without it and under simSeeds further seeds.
func simulate(ctx context.Context, o Options, prof Measured, arr Replay, res *Result) error {
	p := res.Policy
	fmt.Fprintf(o.Progress, "  host stalls during the live run: %s\n", res.LiveStalls)
	during := prof
	during.Stalls = res.LiveStalls
	sim, err := runSim(ctx, o, p, during, arr)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	res.Sim = sim
	if during.Stalls.Sim().Rate == 0 {
		return nil
	}
	ns, err := runSim(ctx, o, p, prof.withoutStalls(), arr)
	if err != nil {
		return fmt.Errorf("sim without stalls: %w", err)
	}
	res.SimNoStalls = &ns
	for k := range uint64(simSeeds) {
		so := o
		so.Seed = o.Seed + 1 + k
		ss, err := runSim(ctx, so, p, during, arr)
		if err != nil {
			return fmt.Errorf("sim seed %d: %w", so.Seed, err)
		}
		res.SimSeeds = append(res.SimSeeds, SeedOutcome{Seed: so.Seed, Attainment: ss.SLOAttainment,
			InstanceSeconds: ss.Extra["instance_seconds"], Launches: ss.Extra["launches"]})
	}
	return nil
}
