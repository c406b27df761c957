package batch

import (
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/policy"

	"github.com/sloserve/sloserve/internal/analytic"
	"github.com/sloserve/sloserve/internal/profile"
)

// The batch policy is BATCH (Ali et al., SC'20): every request goes to the serverless tier through
// a buffer whose (max batch, timeout) the analytic optimiser re-chooses on a sliding window of
// observed arrivals (analytic.Online, §VI-D). The engine fixes the function memory for a run, so
// the optimiser searches (B, T) at that memory; `sloserve plan batch` searches memory too.
// DefaultServiceCV is the coefficient of variation of service times BATCH's planner assumes
// (BATCH §VI measured CV ≤ 0.1 on Lambda; 0.05 for the steadier serving the simulator models:
// the same figure as sim.DefaultNoiseCV, the simulator's default noise, so the planner is told
// the noise it meets — see the honest-evaluation issue).
const DefaultServiceCV = 0.05

func init() {
	policy.Register(policy.Spec{Name: "batch", Port: policy.PortModel, Doc: "BATCH: analytic optimiser of batch size and timeout for the serverless tier, re-fitted on a sliding window (BATCH §VI-D)", New: policy.ModelFactory(New)})
}

// Options configures the batch policy.
type Options struct {
	// MemoryMB is the function memory, MB (default 3008, BATCH's largest).
	MemoryMB int `yaml:"memory_mb"`
	// MaxBatch is B_max, the largest max batch explored (default 20).
	MaxBatch int `yaml:"max_batch"`
	// TimeoutStep and TimeoutMax span the timeouts explored (default 10 ms … 490 ms).
	TimeoutStep time.Duration `yaml:"timeout_step"`
	TimeoutMax  time.Duration `yaml:"timeout_max"`
	// Window and Period are the sliding window and the re-optimisation period (default 1 h each).
	Window time.Duration `yaml:"window"`
	Period time.Duration `yaml:"period"`
	// ServiceCV is the coefficient of variation of batch service times the optimiser plans for:
	// a plan must be predicted to serve the SLO's target fraction of requests within its
	// threshold when every batch's service time varies log-normally with this CV
	// (analytic.Problem.ServiceCV). Default 0.05, the simulator's default noise_cv (the policy
	// is not told a run's noise); 0 is BATCH's deterministic model, whose plans sit a few ms
	// under the SLO and miss it under noise (issue #18). In [0, 2].
	ServiceCV float64 `yaml:"service_cv"`
	// Pin, when its MaxBatch is > 0, runs one fixed plan (MaxBatch, Timeout at memory_mb) for
	// the whole run instead of re-optimising, e.g. a plan of `sloserve plan batch`.
	Pin Pin `yaml:"pin"`
}

// Pin is a fixed (B, T) for the batch policy.
type Pin struct {
	// MaxBatch is B, ≥ 1 to pin (0: not pinned).
	MaxBatch int `yaml:"max_batch"`
	// Timeout is T, ≥ 0.
	Timeout time.Duration `yaml:"timeout"`
}

// MemoryService adapts a model's serverless profile at one memory size to analytic.ServiceModel.
type MemoryService struct {
	// Curve is the batch service-time curve at MemoryMB; MaxBatch the largest batch served.
	Curve    profile.Curve
	MemoryMB int
	MaxBatch int
}

func (m MemoryService) ServiceTime(k, _ int) float64 { return m.Curve.ServiceTime(k).Seconds() }

func (m MemoryService) Domain() (int, int, int, int) { return 1, m.MaxBatch, m.MemoryMB, m.MemoryMB }

// DefaultOptions returns the batch policy's defaults (BATCH's: 3008 MB, B_max 20,
// 10–490 ms, a 1-hour window re-fitted hourly; planned for a 5 % service noise).
func DefaultOptions() Options {
	g := analytic.DefaultGrid()
	pc := analytic.DefaultPolicyConfig()
	return Options{MemoryMB: policy.DefaultLambdaMemoryMB, MaxBatch: g.MaxBatch, TimeoutStep: g.TimeoutStep,
		TimeoutMax: g.TimeoutMax, Window: pc.Window, Period: pc.Period, ServiceCV: DefaultServiceCV}
}

// Problem returns BATCH's online problem for env with options o: the service model at
// the one memory size (clamped to the catalog's range) and the re-fit's configuration, P_p ≤ the
// SLO itself at the SLO's target under o.ServiceCV. sloserve solves it too, as its reference
// (Reference), without the service noise: the reference is BATCH's own, deterministic problem.
func Problem(env policy.Env, o Options) (MemoryService, analytic.PolicyConfig, error) {
	switch {
	case o.MemoryMB <= 0:
		return MemoryService{}, analytic.PolicyConfig{}, fmt.Errorf("batch.memory_mb: must be > 0, got %d", o.MemoryMB)
	case !(o.ServiceCV >= 0 && o.ServiceCV <= 2):
		return MemoryService{}, analytic.PolicyConfig{}, fmt.Errorf("batch.service_cv: must be in [0, 2], got %v", o.ServiceCV)
	}
	if env.Model.Serverless == nil {
		return MemoryService{}, analytic.PolicyConfig{}, fmt.Errorf("batch: model %s has no serverless profile", env.Model.Name)
	}
	mem := o.MemoryMB
	if env.Catalog != nil {
		mem = env.Catalog.Serverless.ClampMemory(mem)
	}
	curve, err := env.Model.Serverless.At(mem)
	if err != nil {
		return MemoryService{}, analytic.PolicyConfig{}, fmt.Errorf("batch: %w", err)
	}
	pc := analytic.DefaultPolicyConfig()
	pc.Window, pc.Period = o.Window, o.Period
	pc.Grid = analytic.Grid{MemoryMinMB: mem, MemoryMaxMB: mem, MemoryStepMB: 1, MaxBatch: o.MaxBatch,
		TimeoutStep: o.TimeoutStep, TimeoutMax: o.TimeoutMax}
	pc.ServiceCV = o.ServiceCV
	pc.SLO = env.SLO.Threshold
	pc.Percentile = env.SLO.Target
	if pc.Percentile >= 1 {
		pc.Percentile = 0.999
	}
	return MemoryService{Curve: curve, MemoryMB: mem, MaxBatch: o.MaxBatch}, pc, nil
}

func New(env policy.Env) (policy.Model, error) {
	o := DefaultOptions()
	if err := env.DecodeOptions(&o); err != nil {
		return policy.Model{}, err
	}
	svc, pc, err := Problem(env, o)
	if err != nil {
		return policy.Model{}, err
	}
	var online *analytic.Online
	switch {
	case o.Pin.MaxBatch < 0 || o.Pin.MaxBatch > o.MaxBatch || o.Pin.Timeout < 0:
		return policy.Model{}, fmt.Errorf("batch.pin: max_batch must be in [0, max_batch %d] and timeout ≥ 0, got %d, %v", o.MaxBatch, o.Pin.MaxBatch, o.Pin.Timeout)
	case o.Pin.MaxBatch > 0:
		online = analytic.NewPinnedOnline(analytic.Plan{MemoryMB: svc.MemoryMB, MaxBatch: o.Pin.MaxBatch, Timeout: o.Pin.Timeout,
			TimeoutMS: float64(o.Pin.Timeout) / float64(time.Millisecond), Percentile: pc.Percentile, Reason: "pinned by policies.batch.pin"})
	default:
		online, err = analytic.NewOnline(pc, svc)
		if err != nil {
			return policy.Model{}, fmt.Errorf("batch: %w", err)
		}
	}
	return policy.Model{
		Router:     policy.ServerlessOnly{},
		Serverless: &policy.Serverless{MemoryMB: svc.MemoryMB, Batching: analytic.NewBufferPolicy(online)},
	}, nil
}
