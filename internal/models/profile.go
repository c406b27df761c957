package models

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"
)

// ProfileOptions configures MeasureProfile.
type ProfileOptions struct {
	// Batches are the batch sizes to measure (each ≥ 1).
	Batches []int
	// MinRuns is the least number of timed runs per batch size (≥ 1).
	MinRuns int
	// MaxRuns caps the timed runs per batch size (≥ MinRuns).
	MaxRuns int
	// MinTime is the least total timed duration per batch size; runs continue past MinRuns until
	// it is reached or MaxRuns is hit.
	MinTime time.Duration
	// Warmup is the number of untimed runs before timing each batch size (≥ 0).
	Warmup int
	// Operators also times each node at each batch size (native runtime only).
	Operators bool
	// Clock is ClockThreadCPU or ClockWall (default ClockThreadCPU where available).
	Clock string
}

// Clocks for ProfileOptions.Clock.
const (
	// ClockThreadCPU measures the CPU time of the OS thread that runs the batch: on a shared
	// machine it is the service time the batch would take on a dedicated core, unaffected by
	// other processes taking the core away mid-run. Valid when the runtime computes on the
	// calling thread — the native runtime always, ONNX Runtime with one intra-op thread.
	ClockThreadCPU = "thread-cpu"
	// ClockWall measures elapsed wall time (what a client sees on this machine right now).
	ClockWall = "wall"
)

// DefaultProfileOptions measures batch sizes 1, 8, 32 and 128 with 20–2000 runs of at least
// 300 ms in all per size after 3 warm-up runs.
func DefaultProfileOptions() ProfileOptions {
	return ProfileOptions{Batches: []int{1, 8, 32, 128}, MinRuns: 20, MaxRuns: 2000, MinTime: 300 * time.Millisecond, Warmup: 3}
}

// Validate reports the first invalid field.
func (o ProfileOptions) Validate() error {
	if len(o.Batches) == 0 {
		return fmt.Errorf("profile options: Batches is empty")
	}
	for _, b := range o.Batches {
		if b < 1 {
			return fmt.Errorf("profile options: batch size %d must be ≥ 1", b)
		}
	}
	switch {
	case o.MinRuns < 1:
		return fmt.Errorf("profile options: MinRuns %d must be ≥ 1", o.MinRuns)
	case o.MaxRuns < o.MinRuns:
		return fmt.Errorf("profile options: MaxRuns %d must be ≥ MinRuns %d", o.MaxRuns, o.MinRuns)
	case o.MinTime < 0:
		return fmt.Errorf("profile options: MinTime %v must be ≥ 0", o.MinTime)
	case o.Warmup < 0:
		return fmt.Errorf("profile options: Warmup %d must be ≥ 0", o.Warmup)
	case o.Clock != "" && o.Clock != ClockThreadCPU && o.Clock != ClockWall:
		return fmt.Errorf("profile options: Clock %q must be %q or %q", o.Clock, ClockThreadCPU, ClockWall)
	}
	return nil
}

// Profile is the measured service time of one model under one runtime. Its JSON is the
// WorkerProfile shape that internal/profile.ReadWorkerProfile reads (model, runtime,
// instance_type, slots, points[].batch/mean_ms/p50_ms/p95_ms/n) plus per_sample_ms, threads and
// the optional per-operator medians.
type Profile struct {
	Model   string `json:"model"`
	Runtime string `json:"runtime"`
	// InstanceType names the machine measured on ("local": this machine).
	InstanceType string `json:"instance_type"`
	// Slots is the number of batches one instance runs at once (1: one Run at a time).
	Slots int `json:"slots"`
	// Threads is the runtime's intra-op thread count (the native runtime uses 1).
	Threads int `json:"threads"`
	// Clock is the clock the times were read from (ClockThreadCPU or ClockWall).
	Clock  string         `json:"clock"`
	Points []ProfilePoint `json:"points"`
	// Operators holds per-node medians per batch size (native runtime, when asked for).
	Operators []OperatorProfile `json:"operators,omitempty"`
}

// ProfilePoint is the service time of one Run of a whole batch, in milliseconds.
type ProfilePoint struct {
	Batch  int     `json:"batch"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
	// PerSampleMS is P50MS / Batch.
	PerSampleMS float64 `json:"per_sample_ms"`
	// N is the number of timed runs.
	N int `json:"n"`
}

// OperatorProfile is the median time of each node at one batch size.
type OperatorProfile struct {
	Batch int            `json:"batch"`
	Nodes []OperatorTime `json:"nodes"`
}

// OperatorTime is one node's median time (milliseconds) over the profiled runs.
type OperatorTime struct {
	Node   string  `json:"node"`
	OpType string  `json:"op_type"`
	P50MS  float64 `json:"p50_ms"`
}

// Point returns the measured point of batch size b.
func (p Profile) Point(b int) (ProfilePoint, bool) {
	for _, pt := range p.Points {
		if pt.Batch == b {
			return pt, true
		}
	}
	return ProfilePoint{}, false
}

// CostRatio returns the per-request cost at batch b relative to batch 1 (medians):
// (t(b)/b) / t(1); below 1 means batching pays. ok is false unless both were measured.
func (p Profile) CostRatio(b int) (ratio float64, ok bool) {
	one, ok1 := p.Point(1)
	pb, ok2 := p.Point(b)
	if !ok1 || !ok2 || one.P50MS == 0 {
		return 0, false
	}
	return pb.PerSampleMS / one.P50MS, true
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// MeasureProfile times r at each batch size; input(b, run) returns the inputs of the run-th run
// at batch size b (vary them between runs: the native runtime's time depends on the data).
// It is a measurement, not a decision: it reads a clock (opts.Clock) and runs the model many
// times. Per-operator times (opts.Operators) are wall times of the nodes within one Run.
func MeasureProfile(ctx context.Context, r Runner, meta Metadata, threads int, input func(b, run int) []Tensor, opts ProfileOptions) (Profile, error) {
	if err := opts.Validate(); err != nil {
		return Profile{}, err
	}
	clock := opts.Clock
	if clock == "" {
		clock = ClockThreadCPU
	}
	if clock == ClockThreadCPU && threads > 1 {
		clock = ClockWall // other threads' work would be missed
	}
	if _, ok := threadCPUTime(); !ok {
		clock = ClockWall
	}
	now := func() time.Duration { return time.Duration(time.Now().UnixNano()) }
	if clock == ClockThreadCPU {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		now = func() time.Duration { d, _ := threadCPUTime(); return d }
	}
	prof := Profile{Model: meta.Name, Runtime: meta.Runtime, InstanceType: "local", Slots: 1, Threads: threads, Clock: clock}
	op, canOps := r.(OperatorProfiler)
	if opts.Operators && !canOps {
		return Profile{}, fmt.Errorf("profile %s: the %s runtime has no per-operator timing", meta.Name, meta.Runtime)
	}
	for _, b := range opts.Batches {
		for i := 0; i < opts.Warmup; i++ {
			if _, err := r.Run(ctx, input(b, i)); err != nil {
				return Profile{}, fmt.Errorf("profile %s batch %d: %w", meta.Name, b, err)
			}
		}
		var times []time.Duration
		var total time.Duration
		for len(times) < opts.MinRuns || (total < opts.MinTime && len(times) < opts.MaxRuns) {
			if err := ctx.Err(); err != nil {
				return Profile{}, err
			}
			in := input(b, len(times))
			start := now()
			if _, err := r.Run(ctx, in); err != nil {
				return Profile{}, fmt.Errorf("profile %s batch %d: %w", meta.Name, b, err)
			}
			d := max(now()-start, 1)
			times = append(times, d)
			total += d
		}
		slices.Sort(times)
		med := times[len(times)/2]
		prof.Points = append(prof.Points, ProfilePoint{
			Batch: b, MeanMS: ms(total) / float64(len(times)), P50MS: ms(med), P95MS: ms(times[(len(times)*95)/100]),
			PerSampleMS: ms(med) / float64(b), N: len(times),
		})
		if opts.Operators {
			nodes, err := operatorMedians(ctx, op, func(run int) []Tensor { return input(b, run) }, min(len(times), 200))
			if err != nil {
				return Profile{}, fmt.Errorf("profile %s batch %d: %w", meta.Name, b, err)
			}
			prof.Operators = append(prof.Operators, OperatorProfile{Batch: b, Nodes: nodes})
		}
	}
	return prof, nil
}

func operatorMedians(ctx context.Context, op OperatorProfiler, input func(run int) []Tensor, runs int) ([]OperatorTime, error) {
	var per [][]time.Duration
	var names []NodeTime
	for i := 0; i < runs; i++ {
		_, times, err := op.RunProfiled(ctx, input(i))
		if err != nil {
			return nil, err
		}
		if per == nil {
			per = make([][]time.Duration, len(times))
			names = times
		}
		for j, t := range times {
			per[j] = append(per[j], t.Time)
		}
	}
	out := make([]OperatorTime, len(per))
	for j, ts := range per {
		slices.Sort(ts)
		out[j] = OperatorTime{Node: names[j].Node, OpType: names[j].OpType, P50MS: ms(ts[len(ts)/2])}
	}
	return out, nil
}
