package infless

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/keepalive"
	plan "github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
)

// Options configures the INFless cluster policy; the ablations of INFless Fig. 11 are
// settings of it.
type Options struct {
	// Alpha is the α of the dispatch band (§3.2: 0.8). In [0, 1].
	Alpha float64 `yaml:"alpha"`
	// Offset inflates predicted execution times (§3.3: +10 %). OP ablation: 0.5 (OP1.5) or 1.0
	// (OP2). ≥ 0.
	Offset float64 `yaml:"offset"`
	// MaxBatch caps the batch sizes explored (§5.1: ≤ 32). BB ablation: 1. ≥ 1.
	MaxBatch int `yaml:"max_batch"`
	// FirstFit disables resource-aware scheduling (RS ablation): the maximum-throughput
	// configuration, first-fit (plan.Config.FirstFit), and with it Defragment.
	FirstFit bool `yaml:"first_fit"`
	// ScaleDownAfter is how long case (iii) of §3.2 must hold before instances are released:
	// INFless's autoscaler releases after 3 inactive monitor ticks of 10 s (infless-constants.json,
	// FunctionInactiveNum). ≥ 0.
	ScaleDownAfter time.Duration `yaml:"scale_down_after"`
	// KeepAlive builds a function's keep-alive policy, which decides when an idle function keeps
	// (or pre-warms) one instance; nil means INFless's LSTH (§3.5) with its defaults.
	KeepAlive func() (keepalive.Policy, error) `yaml:"-"`
	// IdleUnit is the granularity at which the keep-alive policy sees activity: a unit with an
	// arrival keeps the function busy for the whole unit (Shahrad et al.: one minute, the
	// default when 0). The live controller uses its planning unit, with LSTH's bins scaled the
	// same way (keepalive.ScaledLSTHConfig). ≥ 0.
	IdleUnit time.Duration `yaml:"idle_unit"`
	// Beta is the β of Eq. 10's resource-efficiency metric; 0 = the run's β (ClusterConfig.Beta,
	// cluster.DefaultBeta: INFless's FLOPS ratio). ≥ 0.
	Beta float64 `yaml:"beta"`
	// Metric selects the form of Eq. 10's e_ij: as printed (zero value), the released
	// scheduler's (plan.MetricOriginal) or sloserve's (plan.MetricShare, the default), which
	// prices resources by the server's capacity and so ignores Beta.
	Metric plan.Metric `yaml:"-"`
	// Defragment releases a function's surplus instances on the emptiest servers first
	// (plan.ReleaseEmptiestFirst instead of plan.Release) and, every control step without
	// launches, empties the emptiest at most half-used server whose instances fit on fuller ones
	// (plan.Defragment): each is relaunched there with its configuration and released once the
	// new one is ready. Off with FirstFit.
	Defragment bool `yaml:"defragment"`
	// Prediction is what Alg. 1, the α-band's bounds and lending plan with (issue #17: never the
	// profile that generates the simulated service times): PredictionNoisy (the default) — the
	// function's profile with a seeded per-configuration error of up to ±PredictionError
	// (plan.NoisyPredictor), the error COP makes (INFless Fig. 8, and sloserve's leave-one-out in
	// docs/infless.md); PredictionCOP — Predictor, which the caller builds from an operator store
	// (profile.COPStore; the live controller does); PredictionExact — the profile itself, an
	// oracle no real system has, for comparison only.
	Prediction string `yaml:"predictor"`
	// PredictionError is the largest relative error of PredictionNoisy (0.10: ±10 %). In [0, 1).
	PredictionError float64 `yaml:"prediction_error"`
	// PredictionSeed seeds PredictionNoisy's errors, with the function's name.
	PredictionSeed uint64 `yaml:"prediction_seed"`
	// Predictor builds a function's latency predictor from its profile when Prediction is
	// PredictionCOP (e.g. profile.COPStore.Predict over the model's operator graph).
	Predictor func(p profile.INFlessProfile) plan.Predictor `yaml:"-"`
	// Lend lends each active server's free resources to the instances on it every control step
	// (plan.Lend: only profiled configurations that lower a lender's predicted t_exec) and
	// takes them back first whenever the scheduler needs room: Alg. 1, the releases and
	// Defragment decide on the cluster without lending, and every instance's Eq. 1 bounds — so
	// the α-band's split and scaling — stay those of its launch configuration. Lent resources
	// count as allocated and the instance serves at the lent configuration's service time.
	Lend bool `yaml:"lend"`
	// Spare fills the free resources of the servers that host the functions' instances with spare
	// b = 1 instances of the loaded functions (plan.Spares): they take a share of R by the
	// α-band's split but are left out of its scaling, Alg. 1, the releases and Defragment, which
	// decide on the cluster without them; a spare whose room a launch or a move needs is preempted
	// (policy.ClusterDecision.Preempt), one whose function goes idle or whose server no longer hosts an
	// instance of the functions drains. Spares never make a server active.
	Spare bool `yaml:"spare"`
	// QueueCap caps the r_up of b = 1 instances with t_exec > t_slo/2 (plan.SlackLimited: Eq. 1
	// as printed would rule them out, and ⌊1/t_exec⌋ runs them so busy that most requests that wait
	// miss) at their share of plan.PooledRate at the function's SLO target (policy.FunctionView.Target),
	// recomputed each step for the instances the function has (plan.RateBoundsTarget); Alg. 1
	// places for the residual with the same pooled bound.
	QueueCap bool `yaml:"queue_cap"`
	// BoundQueues holds an instance's queue to one batch (policy.QueueBounder, INFless §3.2 Fig. 6(a)):
	// a request no ready instance has room for waits at the function, for the first instance that
	// has, instead of queueing behind a full batch on one instance (which, for a function whose
	// slack t_slo − t_exec is shorter than one execution, misses for every request behind it).
	BoundQueues bool `yaml:"bound_queues"`
	// Backlog adds the function's waiting requests (policy.FunctionView.Waiting), to be served within a
	// second, to R when the function has instances: a burst that outruns its instances scales it by
	// the backlog as well as by the new rate.
	Backlog bool `yaml:"backlog"`
	// BurstHold holds R at its highest value for this long for a function with SlackLimited
	// instances (b = 1, t_exec > t_slo/2: slack shorter than one execution): such a function cannot
	// absorb a burst in queues — every request that arrives before new instances are ready (a control
	// period plus a cold start) misses — so it scales down from its recent peak, not from the
	// current rate, and a burst that recurs within BurstHold finds its instances. 0 = off. ≥ 0.
	BurstHold time.Duration `yaml:"burst_hold"`
	// BurstDrain is how soon such a function's backlog — its waiting requests and its instances'
	// queues — is to be served when Backlog adds it to R (backlog/BurstDrain, instead of the
	// waiting requests within a second): a backlog served in FIFO order delays the requests behind
	// it past their short slack, so it must drain within about one slack. 0 = a second. ≥ 0.
	BurstDrain time.Duration `yaml:"burst_drain"`
}

// Options.Prediction values.
const (
	PredictionNoisy = "noisy"
	PredictionCOP   = "cop"
	PredictionExact = "exact"
)

// DefaultPredictionError is Options.PredictionError's default: ±10 %, INFless Fig. 8's bound on
// COP's error.
const DefaultPredictionError = 0.10

// DefaultMaxBatch is INFless §5.1's "batch sizes are set to ≤ 32".
const DefaultMaxBatch = 32

// DefaultScaleDownAfter is 3 × 10 s (INFless's FunctionInactiveNum × instanceScaleMonitor interval).
const DefaultScaleDownAfter = 30 * time.Second

// DefaultBurstHold and DefaultBurstDrain are sloserve's settings of Options.BurstHold and
// Options.BurstDrain (issue #18 item 10): burst300's bursts recur within a minute, and 100 ms is
// about ssd's slack (t_slo − t_exec = 200 − 126 ms).
const (
	DefaultBurstHold  = time.Minute
	DefaultBurstDrain = 100 * time.Millisecond
)

// DefaultOptions returns INFless as published — α 0.8, +10 % offset, b ≤ 32, Alg. 1,
// 30 s scale-down hold, LSTH — with sloserve's placement: Alg. 1 with e_ij in the
// plan.MetricShare form, Defragment, Spare and Lend, and the per-function SLO fixes of issue
// #18 (QueueCap, BoundQueues, Backlog, BurstHold, BurstDrain). PaperOptions is Eq. 10 as printed.
func DefaultOptions() Options {
	o := PaperOptions()
	o.Metric, o.Defragment, o.Lend, o.Spare = plan.MetricShare, true, true, true
	o.QueueCap, o.BoundQueues, o.Backlog = true, true, true
	o.BurstHold, o.BurstDrain = DefaultBurstHold, DefaultBurstDrain
	return o
}

// PaperOptions returns INFless with Eq. 10 as printed (β = the run's β, INFless's FLOPS
// ratio 64/142), Release's order and no defragmentation: the placement docs/infless.md measures
// as "infless-Eq.10".
func PaperOptions() Options {
	return Options{Alpha: plan.DefaultAlpha, Offset: plan.DefaultOffset, MaxBatch: DefaultMaxBatch, ScaleDownAfter: DefaultScaleDownAfter,
		Prediction: PredictionNoisy, PredictionError: DefaultPredictionError, PredictionSeed: 1}
}

// Validate names the first bad field.
func (o Options) Validate() error {
	switch {
	case !(o.Alpha >= 0 && o.Alpha <= 1):
		return fmt.Errorf("plan.alpha: must be in [0, 1], got %v", o.Alpha)
	case !(o.Offset >= 0) || math.IsInf(o.Offset, 1):
		return fmt.Errorf("plan.offset: must be ≥ 0, got %v", o.Offset)
	case o.MaxBatch < 1:
		return fmt.Errorf("plan.max_batch: must be ≥ 1, got %d", o.MaxBatch)
	case !(o.Beta >= 0) || math.IsInf(o.Beta, 1):
		return fmt.Errorf("plan.beta: must be ≥ 0, got %v", o.Beta)
	case o.ScaleDownAfter < 0:
		return fmt.Errorf("plan.scale_down_after: must be ≥ 0, got %v", o.ScaleDownAfter)
	case o.IdleUnit < 0:
		return fmt.Errorf("plan.idle_unit: must be ≥ 0, got %v", o.IdleUnit)
	case o.Prediction != "" && o.Prediction != PredictionNoisy && o.Prediction != PredictionCOP && o.Prediction != PredictionExact:
		return fmt.Errorf("plan.predictor: must be %s, %s or %s, got %q", PredictionNoisy, PredictionCOP, PredictionExact, o.Prediction)
	case !(o.PredictionError >= 0 && o.PredictionError < 1):
		return fmt.Errorf("plan.prediction_error: must be in [0, 1), got %v", o.PredictionError)
	case o.Prediction == PredictionCOP && o.Predictor == nil:
		return fmt.Errorf("plan.predictor: cop needs an operator store and the function's operator graph (the live controller's controller.operator_store); the simulator's functions have none — use noisy")
	case o.BurstHold < 0 || o.BurstDrain < 0:
		return fmt.Errorf("plan.burst_hold %v and plan.burst_drain %v: must be ≥ 0", o.BurstHold, o.BurstDrain)
	}
	return nil
}

// Policy is INFless as a Cluster policy (the cluster simulator and the live controller run it).
type Policy struct {
	name string
	o    Options
	fns  map[int]*fnState
	// moves are Defragment's relaunches whose old instance is still live.
	moves []move
}

// move is one Defragment relaunch: the old instance is released once a ready instance
// of the function runs the same launch on the target server.
type move struct {
	fn, old int
	to      policy.InstanceLaunch
	since   time.Time
}

// moveTimeout drops a move whose new instance never became ready (released by a scale-down).
const moveTimeout = time.Minute

type fnState struct {
	cfg       plan.Config
	pred      plan.Predictor
	spareOpts []plan.Option // b = 1 options, for plan.Spares
	idle      idleTracker
	downSince time.Time
	// peak is the highest R since peakAt (Options.BurstHold).
	peak   float64
	peakAt time.Time
}

// hold is BurstHold: r, or the highest R of the last hold if that was higher.
func (st *fnState) hold(r float64, now time.Time, hold time.Duration) float64 {
	if r >= st.peak || now.Sub(st.peakAt) > hold {
		st.peak, st.peakAt = r, now
	}
	return max(r, st.peak)
}

// backlog is the rate (1/s) that serves fv's backlog in time (Options.Backlog): its waiting
// requests within a second, or — for a function with SlackLimited instances and BurstDrain set —
// its waiting and queued requests within BurstDrain.
func (p *Policy) backlog(fv policy.FunctionView) float64 {
	if p.o.BurstDrain <= 0 || pool(fv) == 0 {
		return float64(fv.Waiting)
	}
	q := fv.Waiting
	for _, in := range fv.Instances {
		q += in.Queue
	}
	return float64(q) / p.o.BurstDrain.Seconds()
}

// New returns the INFless policy for RunCluster: per function, the α-band (§3.2)
// splits R over the instances (their dispatch weights) and decides the case; in case (i) Alg. 1
// (plan.Schedule) places instances for R − R_max on the shared cluster; in case (iii), held for
// ScaleDownAfter, plan.Release picks the instances to drain. A function with no arrivals in the
// rate window keeps one instance while its keep-alive policy (LSTH) says it is loaded — and
// pre-warms one when the pre-warm window opens — and none otherwise. With o.Defragment, releases
// go to the emptiest servers first and one half-empty server at a time is emptied
// (plan.Defragment).
func New(name string, o Options) (policy.Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if name == "" {
		name = "infless"
	}
	return &Policy{name: name, o: o, fns: map[int]*fnState{}}, nil
}

func (p *Policy) Name() string { return p.name }

func (p *Policy) state(fv policy.FunctionView) (*fnState, error) {
	if st, ok := p.fns[fv.Index]; ok {
		return st, nil
	}
	batches, res := plan.ProfileSpace(fv.Profile)
	var bs []int
	for _, b := range batches {
		if b <= p.o.MaxBatch {
			bs = append(bs, b)
		}
	}
	if len(bs) == 0 {
		bs = []int{1}
	}
	pred := p.predictor(fv)
	ka, err := newKeepAlive(p.o.KeepAlive)
	if err != nil {
		return nil, err
	}
	cfg := plan.Config{SLO: fv.SLO, Batches: bs, Resources: res, Offset: p.o.Offset, FirstFit: p.o.FirstFit, Metric: p.o.Metric}
	if p.o.QueueCap {
		cfg.Target, cfg.Memo = fv.Target, &plan.PoolMemo{}
	}
	st := &fnState{
		cfg:  cfg,
		pred: pred,
		idle: idleTracker{ka: ka, unit: cmp.Or(p.o.IdleUnit, time.Minute)},
	}
	if err := st.cfg.Validate(); err != nil {
		return nil, fmt.Errorf("function %s: %w", fv.Name, err)
	}
	p.fns[fv.Index] = st
	return st, nil
}

// predictor is fv's predictor by Options.Prediction.
func (p *Policy) predictor(fv policy.FunctionView) plan.Predictor {
	switch {
	case p.o.Prediction == PredictionCOP:
		return p.o.Predictor(fv.Profile)
	case p.o.Prediction == PredictionExact:
		return plan.ProfilePredictor(fv.Profile)
	}
	return plan.NoisyPredictor(plan.ProfilePredictor(fv.Profile), fv.Name, p.o.PredictionError, p.o.PredictionSeed)
}

func newKeepAlive(f func() (keepalive.Policy, error)) (keepalive.Policy, error) {
	if f != nil {
		return f()
	}
	return keepalive.NewLSTH(keepalive.DefaultLSTHConfig())
}

// Control applies §3.2's three cases to every function.
func (p *Policy) Control(v policy.ClusterView, now time.Time) (policy.ClusterDecision, error) {
	n := 0
	for _, fv := range v.Functions {
		n += len(fv.Instances)
	}
	d := policy.ClusterDecision{Weights: make(map[int]float64, n)}
	if p.o.Lend {
		// Decide on the cluster without lending: lent shares are free and taken back first.
		for _, fv := range v.Functions {
			for _, in := range fv.Instances {
				if x := lent(in); !x.IsZero() {
					if err := v.Cluster.Release(in.Launch.Server, x); err != nil {
						return d, fmt.Errorf("lent resources of instance %d: %w", in.ID, err)
					}
				}
			}
		}
	}
	var spares [][]policy.InstanceView // by function, when o.Spare: left out of every decision below
	if p.o.Spare {
		var err error
		if v, spares, err = withoutSpares(v); err != nil {
			return d, err
		}
	}
	rates := make([]float64, len(v.Functions))
	for i, fv := range v.Functions {
		st, err := p.state(fv)
		if err != nil {
			return d, err
		}
		st.cfg.Beta = v.Beta
		if p.o.Beta > 0 {
			st.cfg.Beta = p.o.Beta
		}
		st.idle.update(now, fv.Arrivals)
		loaded := st.idle.loaded(now)
		r := max(fv.Rate, fv.RateNow) // scale up on a burst at once; down only after ScaleDownAfter
		if p.o.Backlog && len(fv.Instances) > 0 {
			r += p.backlog(fv)
		}
		if p.o.BurstHold > 0 && pool(fv) > 0 {
			r = st.hold(r, now, p.o.BurstHold)
		}
		rates[i] = r
		if len(fv.Instances) == 0 {
			switch {
			case r > 0:
				if err := p.schedule(&d, v, fv, st, r); err != nil {
					return d, err
				}
			case loaded:
				// Pre-warm one instance for a trickle of load (Alg. 1 then picks b = 1).
				if err := p.schedule(&d, v, fv, st, 1e-9); err != nil {
					return d, err
				}
			}
			continue
		}
		bounds := p.bounds(fv, st)
		split := plan.Band(bounds, r, p.o.Alpha)
		for k, in := range fv.Instances {
			d.Weights[in.ID] = split.Rates[k]
		}
		switch {
		case split.Scale == plan.Up:
			st.downSince = time.Time{}
			if err := p.schedule(&d, v, fv, st, split.Residual); err != nil {
				return d, err
			}
		case split.Scale == plan.Down || r == 0:
			if st.downSince.IsZero() {
				st.downSince = now
			}
			if now.Sub(st.downSince) < p.o.ScaleDownAfter {
				continue
			}
			st.downSince = time.Time{}
			rel := p.release(v, fv, bounds, r)
			if r == 0 && loaded && len(rel) == len(bounds) {
				// Keep-alive: the instance with the smallest r_up stays loaded.
				keep := 0
				for k := range bounds {
					if bounds[k].Up < bounds[keep].Up {
						keep = k
					}
				}
				rel = slices.DeleteFunc(rel, func(k int) bool { return k == keep })
			}
			for _, k := range rel {
				d.Release = append(d.Release, fv.Instances[k].ID)
			}
		default:
			st.downSince = time.Time{}
		}
	}
	if p.defragment() {
		p.defragmentStep(&d, v, now)
	}
	var kept []policy.InstanceView
	if p.o.Spare {
		kept = p.spareStep(&d, v, spares, rates)
	}
	if p.o.Lend {
		p.lend(&d, v, kept)
	}
	return d, nil
}

// withoutSpares returns v with the spare instances (Launch.Spare) taken out of every function's
// Instances and their launch resources freed on a copy of v.Cluster, and the spares by function.
func withoutSpares(v policy.ClusterView) (policy.ClusterView, [][]policy.InstanceView, error) {
	spares := make([][]policy.InstanceView, len(v.Functions))
	fns := make([]policy.FunctionView, len(v.Functions))
	for i, fv := range v.Functions {
		core := make([]policy.InstanceView, 0, len(fv.Instances))
		for _, in := range fv.Instances {
			if !in.Launch.Spare {
				core = append(core, in)
				continue
			}
			if err := v.Cluster.Release(in.Launch.Server, in.Launch.Resources); err != nil {
				return v, nil, fmt.Errorf("spare instance %d: %w", in.ID, err)
			}
			spares[i] = append(spares[i], in)
		}
		fv.Instances = core
		fns[i] = fv
	}
	v.Functions = fns
	return v, spares, nil
}

// spareStep decides the spares after this step's launches, releases and moves are on v.Cluster:
// each existing spare stays if its server still hosts one of the functions' own instances (and
// is not being emptied by Defragment), its function's spare capacity stays within its own, the
// function's utilisation with it is at least half of plan.SpareUtilisation (hysteresis: a
// spare is added at 0.5 and kept down to 0.25) and it still fits; else it drains (if it fits: its
// room is not needed) or is preempted. Then plan.Spares
// fills what is left on the hosts, and every function with spares gets the α-band's split over
// its own instances and its spares as dispatch weights (the scaling case stays the one computed
// without them). It returns the spares that stay, for lending.
func (p *Policy) spareStep(d *policy.ClusterDecision, v policy.ClusterView, spares [][]policy.InstanceView, rates []float64) []policy.InstanceView {
	released := idSet(d.Release)
	host := map[int]bool{}
	core := make([]float64, len(v.Functions))
	for i, fv := range v.Functions {
		for _, in := range fv.Instances {
			if !released[in.ID] {
				host[in.Launch.Server] = true
				core[i] += in.Launch.Bounds.Up
			}
		}
	}
	for _, l := range d.Launch {
		host[l.Server] = true
		core[l.Function] += l.Bounds.Up
	}
	for _, m := range p.moves {
		// A server Defragment is emptying hosts nothing new. (Its instances stay in core: they
		// serve until their replacements are ready.)
		for _, in := range v.Functions[m.fn].Instances {
			if in.ID == m.old {
				delete(host, in.Launch.Server)
			}
		}
	}
	keptBy := make([][]policy.InstanceView, len(v.Functions))
	spareCap := make([]float64, len(v.Functions))
	for i := range v.Functions {
		for _, in := range spares[i] {
			s, r := in.Launch.Server, in.Launch.Resources
			up := in.Launch.Bounds.Up
			want := host[s] && spareCap[i]+up <= core[i] && rates[i]/(core[i]+spareCap[i]+up) >= plan.SpareUtilisation/2
			if !v.Cluster.Free(s).Fits(r) {
				d.Preempt = append(d.Preempt, in.ID)
				d.Reasons = append(d.Reasons, fmt.Sprintf("sloserve spare: preempt instance %d of %s on server %d (its room is needed)", in.ID, v.Functions[i].Name, s))
				continue
			}
			_ = v.Cluster.Place(s, r) // fits: checked above
			if !want {
				d.Release = append(d.Release, in.ID)
				d.Reasons = append(d.Reasons, fmt.Sprintf("sloserve spare: drain instance %d of %s (utilisation below %.2f, server without own instances, or spares above its own capacity)", in.ID, v.Functions[i].Name, plan.SpareUtilisation/2))
				continue
			}
			spareCap[i] += up
			keptBy[i] = append(keptBy[i], in)
		}
	}
	hosts := make([]int, 0, len(host))
	for s := range host {
		hosts = append(hosts, s)
	}
	slices.Sort(hosts)
	sf := make([]plan.SpareFunction, len(v.Functions))
	for i, fv := range v.Functions {
		st := p.fns[fv.Index]
		if st.spareOpts == nil {
			for _, o := range plan.Options(st.cfg, st.pred) {
				if o.Batch == 1 {
					st.spareOpts = append(st.spareOpts, o)
				}
			}
		}
		sf[i] = plan.SpareFunction{Rate: rates[i], Core: core[i], Spare: spareCap[i], Options: st.spareOpts}
	}
	for _, pl := range plan.Spares(v.Cluster, hosts, sf) {
		fv := v.Functions[pl.Function]
		l := LaunchOf(fv, pl.Option, pl.Server)
		l.Spare = true
		d.Launch = append(d.Launch, l)
		d.Reasons = append(d.Reasons, fmt.Sprintf("sloserve spare: %s b=1 %+v on server %d (r_up %.0f/s) in free resources", fv.Name, pl.Resources, pl.Server, pl.Bounds.Up))
	}
	for i, fv := range v.Functions {
		if len(keptBy[i]) == 0 {
			continue
		}
		var ins []policy.InstanceView
		for _, in := range fv.Instances {
			if !released[in.ID] {
				ins = append(ins, in)
			}
		}
		ins = append(ins, keptBy[i]...)
		bounds := make([]plan.Bounds, len(ins))
		for k, in := range ins {
			bounds[k] = in.Launch.Bounds
		}
		split := plan.Band(bounds, rates[i], p.o.Alpha)
		for k, in := range ins {
			d.Weights[in.ID] = split.Rates[k]
		}
	}
	return slices.Concat(keptBy...)
}

// idSet is ids as a set (the instances a decision releases).
func idSet(ids []int) map[int]bool {
	m := make(map[int]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// lent is what instance in holds beyond its launch configuration.
func lent(in policy.InstanceView) cluster.Resources {
	if in.Resources.IsZero() || in.Resources == in.Launch.Resources {
		return cluster.Resources{}
	}
	return in.Resources.Sub(in.Launch.Resources)
}

// lend sets d.Lend: after the launches, releases and moves of this step are decided (and the
// launches allocated on v.Cluster), each server's free resources are split over the instances
// on it that stay — the functions' own and the spares kept — (plan.Lend, weighted by their
// dispatch rates this step).
func (p *Policy) lend(d *policy.ClusterDecision, v policy.ClusterView, spares []policy.InstanceView) {
	d.Lend = map[int]cluster.Resources{}
	released := idSet(d.Release)
	lenders, ids := map[int][]plan.Lender{}, map[int][]int{} // by server, in the same order
	var servers []int
	// The functions' own instances in order, then the spares kept.
	add := func(in *policy.InstanceView) {
		if released[in.ID] {
			return
		}
		st := p.fns[in.Launch.Function]
		s := in.Launch.Server
		if _, ok := lenders[s]; !ok {
			servers = append(servers, s)
		}
		lenders[s] = append(lenders[s], plan.Lender{Base: in.Launch.Resources, Batch: in.Launch.Batch,
			Rate: d.Weights[in.ID], Configs: st.cfg.Resources, Predict: st.pred})
		ids[s] = append(ids[s], in.ID)
	}
	for _, fv := range v.Functions {
		for k := range fv.Instances {
			add(&fv.Instances[k])
		}
	}
	for k := range spares {
		add(&spares[k])
	}
	for _, s := range servers {
		ls := lenders[s]
		for k, r := range plan.Lend(v.Cluster.Free(s), v.Cluster.Capacity(s), ls) {
			if r != ls[k].Base {
				d.Lend[ids[s][k]] = r
			}
		}
	}
}

func (p *Policy) defragment() bool { return p.o.Defragment && !p.o.FirstFit }

// release picks the instances to drain in case (iii): plan.Release, or with Defragment
// plan.ReleaseEmptiestFirst by the allocated share of each instance's server.
func (p *Policy) release(v policy.ClusterView, fv policy.FunctionView, bounds []plan.Bounds, r float64) []int {
	if !p.defragment() {
		return plan.Release(bounds, r)
	}
	fill := make([]float64, len(fv.Instances))
	for k, in := range fv.Instances {
		fill[k] = plan.Share(v.Cluster.Used(in.Launch.Server), v.Cluster.Capacity(in.Launch.Server))
	}
	return plan.ReleaseEmptiestFirst(bounds, r, fill)
}

// defragmentStep finishes the moves whose new instance is ready (releasing the old one) and, when
// no move is in flight and nothing was launched this step, starts plan.Defragment's next moves:
// it launches each moved instance's configuration on its target (allocating on v.Cluster).
func (p *Policy) defragmentStep(d *policy.ClusterDecision, v policy.ClusterView, now time.Time) {
	if len(p.moves) == 0 && len(d.Launch) > 0 {
		return // no move to finish, and none starts in a step with launches
	}
	released := idSet(d.Release)
	live := map[int]policy.InstanceView{}
	fnOf := map[int]int{}
	for fi, fv := range v.Functions {
		for _, in := range fv.Instances {
			live[in.ID], fnOf[in.ID] = in, fi
		}
	}
	moving := map[int]bool{}
	keep := p.moves[:0]
	for _, m := range p.moves {
		if _, ok := live[m.old]; !ok || released[m.old] || now.Sub(m.since) > moveTimeout {
			continue // the old instance is gone (scaled down) or the new one never came
		}
		started, ready := false, false
		for _, in := range v.Functions[m.fn].Instances {
			if in.ID != m.old && in.Launch.Server == m.to.Server && in.Launch.Resources == m.to.Resources && in.Launch.Batch == m.to.Batch {
				started, ready = true, ready || in.Ready
			}
		}
		if ready {
			d.Release = append(d.Release, m.old)
			released[m.old] = true
			continue
		}
		if !started {
			continue // the new instance was released before it was ready: the old one stays
		}
		moving[m.old] = true
		keep = append(keep, m)
	}
	p.moves = keep
	if len(p.moves) > 0 || len(d.Launch) > 0 {
		return
	}
	var rs []plan.Resident
	for _, fv := range v.Functions {
		for _, in := range fv.Instances {
			rs = append(rs, plan.Resident{ID: in.ID, Server: in.Launch.Server, Resources: in.Launch.Resources,
				Movable: in.Ready && !moving[in.ID] && !released[in.ID]})
		}
	}
	for _, mv := range plan.Defragment(v.Cluster, rs, plan.DefaultDefragmentShare) {
		l := live[mv.ID].Launch
		l.Server = mv.To
		if err := v.Cluster.Place(mv.To, l.Resources); err != nil {
			return // Defragment checked the room on the same cluster; cannot happen
		}
		d.Launch = append(d.Launch, l)
		p.moves = append(p.moves, move{fn: fnOf[mv.ID], old: mv.ID, to: l, since: now})
	}
}

// bounds are the Eq. 1 bounds of fv's instances, with the SlackLimited ones' r_up at their share
// of plan.PooledRate over all of them (plan.RateBoundsTarget at the function's target): the
// cap depends on how many there are, so it is recomputed every step rather than kept from launch.
func (p *Policy) bounds(fv policy.FunctionView, st *fnState) []plan.Bounds {
	bounds := make([]plan.Bounds, len(fv.Instances))
	pool := 0
	for k, in := range fv.Instances {
		bounds[k] = in.Launch.Bounds
		if st.cfg.Target > 0 && plan.SlackLimited(in.Launch.Batch, in.Launch.Exec, fv.SLO) {
			pool++
		}
	}
	if pool == 0 {
		return bounds
	}
	type capped struct {
		b  plan.Bounds
		ok bool
	}
	byExec := map[time.Duration]capped{} // instances share a few configurations
	for k, in := range fv.Instances {
		if plan.SlackLimited(in.Launch.Batch, in.Launch.Exec, fv.SLO) {
			c, seen := byExec[in.Launch.Exec]
			if !seen {
				c.b, c.ok = st.cfg.Memo.RateBoundsTarget(in.Launch.Batch, in.Launch.Exec, fv.SLO, st.cfg.Target, pool)
				byExec[in.Launch.Exec] = c
			}
			if c.ok {
				bounds[k] = c.b
			}
		}
	}
	return bounds
}

// pool counts fv's SlackLimited instances (plan.Config.Pool).
func pool(fv policy.FunctionView) int {
	n := 0
	for _, in := range fv.Instances {
		if plan.SlackLimited(in.Launch.Batch, in.Launch.Exec, fv.SLO) {
			n++
		}
	}
	return n
}

func (p *Policy) schedule(d *policy.ClusterDecision, v policy.ClusterView, fv policy.FunctionView, st *fnState, residual float64) error {
	st.cfg.Pool = pool(fv)
	res, err := plan.Schedule(v.Cluster, residual, st.cfg, st.pred)
	if err != nil {
		return fmt.Errorf("function %s: %w", fv.Name, err)
	}
	d.Launch = slices.Grow(d.Launch, len(res.Placements))
	for _, pl := range res.Placements {
		d.Launch = append(d.Launch, LaunchOf(fv, pl.Option, pl.Server))
	}
	return nil
}

// LaunchOf builds the launch of option o on server for fv; the batch timeout is t_slo − t_exec
// (INFless's estimator: batch_timeout = SLO − exec), so that a full wait plus a predicted
// execution meets the SLO.
func LaunchOf(fv policy.FunctionView, o plan.Option, server int) policy.InstanceLaunch {
	return policy.InstanceLaunch{Function: fv.Index, Server: server, Resources: o.Resources, Batch: o.Batch,
		Timeout: max(fv.SLO-o.Exec, 0), Exec: o.Exec, Bounds: o.Bounds}
}

// idleTracker feeds a keep-alive policy the way keepalive.Replay does (Shahrad et al.): a unit
// (one minute in the simulator) with arrivals keeps the function busy for the whole unit; after
// the last busy unit ends, the windows say when the function is loaded.
type idleTracker struct {
	ka      keepalive.Policy
	unit    time.Duration
	minute  time.Time
	active  bool
	lastArr int64
	lastEnd time.Time
	seen    bool
	win     keepalive.Windows
}

func (t *idleTracker) update(now time.Time, arrivals int64) {
	m := now.Truncate(t.unit)
	if !m.Equal(t.minute) {
		if t.active {
			end := t.minute.Add(t.unit)
			t.ka.Observe(t.minute, end)
			t.win = t.ka.Windows(end)
			t.lastEnd, t.seen = end, true
		}
		t.minute, t.active = m, false
	}
	if arrivals > t.lastArr {
		t.active, t.lastArr = true, arrivals
	}
}

// loaded reports whether the function should have an instance loaded at now.
func (t *idleTracker) loaded(now time.Time) bool {
	if t.active {
		return true
	}
	if !t.seen {
		return false
	}
	// Windows.Loaded: the linger after the last busy minute (LSTH's burst stage), then the
	// pre-warm and keep-alive windows.
	return t.win.Loaded(now.Sub(t.lastEnd))
}

// BoundedQueues implements policy.QueueBounder.
func (p *Policy) BoundedQueues() bool { return p.o.BoundQueues }
