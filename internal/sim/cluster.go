package sim

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/sim/des"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/slo"
)

// The cluster simulator (RunCluster) runs several inference functions, each with its own
// measured INFless profile, arrival trace and SLO, on one cluster of servers with CPU cores and
// GPU SM shares (internal/cluster). Unlike Run — one model, one shared batch queue in front of a
// VM fleet priced by a cloud catalog — every instance here has its own batch size, timeout and
// ⟨cpu, gpu⟩ share and its own batch queue (INFless §3.2, "non-uniform"), and cost is resources
// held, not dollars. It is a separate loop rather than a mode of Run so that the shared-queue
// engine and its policies stay exactly as they are; it reuses the event heap, the batching
// policies (batching.NewFixed per instance) and the dispatch pickers.

// ClusterFunction is one inference function of a multi-function workload.
type ClusterFunction struct {
	// Name names the function in the Summaries.
	Name string
	// Profile is the function's measured latency per ⟨cpu, gpu, batch⟩: what its instances really
	// take (with Config noise).
	Profile profile.INFlessProfile
	// SLO is the function's latency objective (INFless: OSVT 200 ms, Q&A 50 ms).
	SLO slo.Spec
	// Arrivals are the function's request arrivals (offsets from the start of the run).
	Arrivals Arrivals
	// Trace names the arrival trace.
	Trace string
	// MeanRPS is an offline estimate of the function's mean request rate (1/s), for policies that
	// size one static configuration (the uniform baseline).
	MeanRPS float64
}

// ClusterConfig parameterises a cluster run.
type ClusterConfig struct {
	// Servers is the number of servers; Server the capacity of each.
	Servers int
	Server  cluster.Resources
	// Beta converts CPU cores into GPU SM-percent units (INFless Eq. 2); 0 = cluster.DefaultBeta.
	Beta float64
	// ControlPeriod is how often the policy is asked (INFless's dispatcher runs every 1 s). > 0.
	ControlPeriod time.Duration
	// RateWindow is the window over which a function's arrival rate R is measured. ≥ ControlPeriod.
	RateWindow time.Duration
	// StartDelay is an instance's cold start: from placement to accepting requests. ≥ 0.
	StartDelay time.Duration
	// NoiseCV is the coefficient of variation of batch execution times (log-normal, mean
	// preserved). In [0, 2].
	NoiseCV float64
	// RequestTimeout is the longest a request waits in a queue before it fails. > 0.
	RequestTimeout time.Duration
	// Seed makes the run deterministic.
	Seed uint64
	// Trace names the workload in the aggregate Summary.
	Trace string
	// Epoch is the virtual wall-clock time of offset 0 (zero = DefaultEpoch).
	Epoch time.Time
}

// Cluster simulator defaults.
const (
	// DefaultClusterServers is 64 servers: enough for the OSVT + Q&A workloads at 100 rps peak per
	// function; only active servers count towards fragments and resources.
	DefaultClusterServers = 64
	// DefaultControlPeriod is INFless's dispatcher interval, 1 s (infless-constants.json).
	DefaultControlPeriod = time.Second
	// DefaultStartDelay is 1 s: INFless loads models into containers that its LSTH policy keeps
	// pre-warmed, and TF-Serving with a cached image starts in about a second.
	DefaultStartDelay = time.Second
)

// DefaultClusterConfig returns the defaults.
func DefaultClusterConfig() ClusterConfig {
	return ClusterConfig{
		Servers:        DefaultClusterServers,
		Server:         cluster.DefaultServer,
		ControlPeriod:  DefaultControlPeriod,
		RateWindow:     policy.DefaultRateWindow,
		StartDelay:     DefaultStartDelay,
		NoiseCV:        DefaultNoiseCV,
		RequestTimeout: DefaultRequestTimeout,
		Seed:           1,
		Epoch:          DefaultEpoch,
	}
}

// Validate names the first bad field.
func (c ClusterConfig) Validate() error {
	switch {
	case c.Servers < 1:
		return fmt.Errorf("cluster.servers: must be ≥ 1, got %d", c.Servers)
	case c.Server.CPU < 0 || c.Server.GPU < 0 || c.Server.IsZero():
		return fmt.Errorf("cluster.server: must be non-negative and non-zero, got %+v", c.Server)
	case c.Beta < 0 || math.IsNaN(c.Beta):
		return fmt.Errorf("cluster.beta: must be ≥ 0, got %v", c.Beta)
	case c.ControlPeriod <= 0:
		return fmt.Errorf("cluster.control_period: must be > 0, got %v", c.ControlPeriod)
	case c.RateWindow < c.ControlPeriod:
		return fmt.Errorf("cluster.rate_window: must be ≥ control_period %v, got %v", c.ControlPeriod, c.RateWindow)
	case c.StartDelay < 0:
		return fmt.Errorf("cluster.start_delay: must be ≥ 0, got %v", c.StartDelay)
	case !(c.NoiseCV >= 0 && c.NoiseCV <= 2):
		return fmt.Errorf("cluster.noise_cv: must be in [0, 2], got %v", c.NoiseCV)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("cluster.request_timeout: must be > 0, got %v", c.RequestTimeout)
	}
	return nil
}

// ClusterResult is the outcome of a cluster run.
type ClusterResult struct {
	// Summary aggregates every function: attainment counts each request against its own
	// function's SLO. Extra holds fragment_ratio (spares and loans counted as free; with them
	// allocated: fragment_ratio_filled; per dimension fragment_cpu, fragment_gpu and their _filled
	// forms), rps_per_resource, rps_per_alloc_resource,
	// mean_instances, mean_active_servers, mean_alloc_cpu, mean_alloc_gpu, launches, releases
	// (preemptions included), preemptions, cold_start_requests, timeouts and each function's
	// attainment and target (per_function.<name>.attainment, .target; per_function.worst_margin).
	Summary slo.Summary
	// Functions are the per-function Summaries, in the run's order.
	Functions []slo.Summary
	// BatchInstances counts launched instances by batch size (INFless Fig. 13).
	BatchInstances map[int]int
}

// cluster event kinds (disjoint from engine.go's).
const (
	cevArrival uint8 = 100 + iota
	cevReady
	cevDone
	cevWake
	cevControl
)

type cInst struct {
	policy.InstanceLaunch
	curve    profile.Curve
	pol      *batching.Fixed
	q        des.Ring
	ready    bool
	busy     bool
	draining bool
	ended    bool
	wakeAt   int64
	weight   float64
	assigned int
	inflight []int64
	// res is the configuration it runs on (Resources, or a lent one); svc is the service time of
	// the batch in flight at res and doneAt when it completes.
	res    cluster.Resources
	svc    int64
	doneAt int64
}

type cFn struct {
	ClusterFunction
	rec      *slo.Recorder
	pending  des.Ring
	live     []int // live (not ended) instance ids, launch order
	win      []int // arrivals per control period, ring over RateWindow
	winAt    int
	cur      int
	arrivals int64
	cold     int64
	curves   map[cluster.Resources]profile.Curve
}

type cEngine struct {
	ctx   context.Context
	cfg   ClusterConfig
	pol   policy.Cluster
	beta  float64
	cl    *cluster.Cluster
	fns   []*cFn
	insts []*cInst
	h     des.Heap
	now   int64
	rng   *rand.Rand
	sig   float64
	cands []dispatch.Instance
	cidx  []int
	// byQueue dispatches by queued work (policy.QueueDispatcher) instead of by assigned counts.
	byQueue bool
	// qbound caps every instance's queue at its batch size (policy.QueueBounder); sawReady is set by
	// pick when the function had a ready instance (so a request it leaves pending is no cold start).
	qbound, sawReady bool

	queued, inflight int
	arrivalsLeft     int
	usedW, capW      float64
	usedR, capR      cluster.Resources
	usedCPUArea      float64
	capCPUArea       float64
	usedGPUArea      float64
	capGPUArea       float64
	allocArea        float64
	capArea          float64
	fillR            cluster.Resources // held by spares and loans (reweigh)
	fillArea         float64
	fillCPUArea      float64
	fillGPUArea      float64
	instArea         float64
	nLive            int
	activeArea       float64
	nActive          int
	last             int64
	launches         int64
	releases         int64
	preemptions      int64
	timeouts         int64
	byBatch          map[int]int
}

// RunCluster simulates pol serving fns on a cluster of cfg.Servers servers and returns the
// aggregate and per-function Summaries. It is deterministic for a given cfg.Seed.
func RunCluster(ctx context.Context, cfg ClusterConfig, fns []ClusterFunction, pol policy.Cluster) (*ClusterResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(fns) == 0 {
		return nil, fmt.Errorf("cluster: no functions")
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = DefaultEpoch
	}
	e := &cEngine{ctx: ctx, cfg: cfg, pol: pol, beta: cfg.Beta, cl: cluster.New(cfg.Servers, cfg.Server),
		rng: rand.New(rand.NewPCG(cfg.Seed, 0xc1a57e)), byBatch: map[int]int{}}
	if e.beta == 0 {
		e.beta = cluster.DefaultBeta
	}
	if qd, ok := pol.(policy.QueueDispatcher); ok {
		e.byQueue = qd.DispatchByQueue()
	}
	if qb, ok := pol.(policy.QueueBounder); ok {
		e.qbound = qb.BoundedQueues()
	}
	if cfg.NoiseCV > 0 {
		e.sig = math.Sqrt(math.Log1p(cfg.NoiseCV * cfg.NoiseCV))
	}
	nwin := int((cfg.RateWindow + cfg.ControlPeriod - 1) / cfg.ControlPeriod)
	for i, f := range fns {
		if err := f.SLO.Validate(); err != nil {
			return nil, fmt.Errorf("cluster: function %s: %w", f.Name, err)
		}
		if f.Arrivals == nil || len(f.Profile.Points) == 0 {
			return nil, fmt.Errorf("cluster: function %s needs arrivals and a profile", f.Name)
		}
		fn := &cFn{ClusterFunction: f, rec: slo.NewRecorder(f.SLO), win: make([]int, nwin), curves: map[cluster.Resources]profile.Curve{}}
		e.fns = append(e.fns, fn)
		if at, ok := f.Arrivals.Next(); ok {
			e.h.Push(int64(at), cevArrival, int32(i))
			e.arrivalsLeft++
		}
	}
	e.control()
	e.h.Push(int64(cfg.ControlPeriod), cevControl, 0)
	if err := e.loop(); err != nil {
		return nil, err
	}
	return e.finish(), nil
}

func (e *cEngine) t(off int64) time.Time { return e.cfg.Epoch.Add(time.Duration(off)) }

func (e *cEngine) busy() bool { return e.arrivalsLeft > 0 || e.queued > 0 || e.inflight > 0 }

func (e *cEngine) loop() error {
	var steps uint64
	for e.h.Len() > 0 {
		steps++
		if steps&0xffff == 0 {
			if err := e.ctx.Err(); err != nil {
				return err
			}
		}
		ev := e.h.Pop()
		e.advance(ev.At)
		switch ev.Kind {
		case cevArrival:
			e.arrive(int(ev.ID))
		case cevReady:
			e.becomeReady(int(ev.ID))
		case cevDone:
			if in := e.insts[ev.ID]; in.busy && in.doneAt == ev.At {
				e.done(int(ev.ID))
			}
		case cevWake:
			if in := e.insts[ev.ID]; in.wakeAt == ev.At {
				in.wakeAt = -1
				e.pump(int(ev.ID))
			}
		case cevControl:
			if err := e.control(); err != nil {
				return err
			}
			if e.busy() {
				e.h.Push(e.now+int64(e.cfg.ControlPeriod), cevControl, 0)
			}
		}
	}
	return nil
}

// advance integrates the time-averaged resource figures up to at.
func (e *cEngine) advance(at int64) {
	if dt := float64(at - e.last); dt > 0 {
		e.allocArea += e.usedW * dt
		e.capArea += e.capW * dt
		e.fillArea += e.fillR.Weighted(e.beta) * dt
		e.fillCPUArea += float64(e.fillR.CPU) * dt
		e.fillGPUArea += float64(e.fillR.GPU) * dt
		e.usedCPUArea += float64(e.usedR.CPU) * dt
		e.capCPUArea += float64(e.capR.CPU) * dt
		e.usedGPUArea += float64(e.usedR.GPU) * dt
		e.capGPUArea += float64(e.capR.GPU) * dt
		e.instArea += float64(e.nLive) * dt
		e.activeArea += float64(e.nActive) * dt
		e.last = at
	}
	e.now = at
}

func (e *cEngine) reweigh() {
	e.usedW, e.capW = e.cl.Weighted(e.beta)
	e.usedR, e.capR = e.cl.ActiveTotals()
	e.nActive = e.cl.ActiveServers()
	// What spares and loans hold: allocated, but to fill free space, not for the functions' own
	// instances at their launch configurations.
	e.fillR = cluster.Resources{}
	for _, fn := range e.fns {
		for _, id := range fn.live {
			in := e.insts[id]
			if in.Spare {
				e.fillR = e.fillR.Add(in.res)
			} else if in.res != in.Resources {
				e.fillR = e.fillR.Add(in.res.Sub(in.Resources))
			}
		}
	}
}

func (e *cEngine) arrive(fi int) {
	fn := e.fns[fi]
	fn.arrivals++
	fn.cur++
	if at, ok := fn.Arrivals.Next(); ok {
		if int64(at) < e.now {
			at = time.Duration(e.now)
		}
		e.h.Push(int64(at), cevArrival, int32(fi))
	} else {
		e.arrivalsLeft--
	}
	e.queued++
	if i := e.pick(fn); i >= 0 {
		e.enqueue(i, e.now)
		return
	}
	if !e.sawReady {
		fn.cold++
	}
	fn.pending.Push(e.now)
}

// pick chooses a ready instance of fn by its weight (dispatch.WeightedLeastOutstanding over the
// requests assigned since the last control step: each instance receives arrivals in proportion to
// its α-band rate).
func (e *cEngine) pick(fn *cFn) int {
	e.cands, e.cidx = e.cands[:0], e.cidx[:0]
	e.sawReady = false
	for _, id := range fn.live {
		in := e.insts[id]
		if !in.ready || in.draining {
			continue
		}
		e.sawReady = true
		if e.qbound && in.q.N >= in.Batch {
			continue // its next batch is full
		}
		out := in.assigned
		if e.byQueue {
			out = in.q.N + len(in.inflight)
		}
		e.cands = append(e.cands, dispatch.Instance{Free: 1, Outstanding: out, Weight: in.weight})
		e.cidx = append(e.cidx, id)
	}
	k := dispatch.WeightedLeastOutstanding(e.cands)
	if k < 0 {
		return -1
	}
	return e.cidx[k]
}

func (e *cEngine) enqueue(i int, arrival int64) {
	in := e.insts[i]
	in.assigned++
	in.q.Push(arrival)
	e.pump(i)
}

func (e *cEngine) fail(fn *cFn) {
	e.queued--
	e.timeouts++
	fn.rec.Failed()
}

// pump runs instance i's batching policy: dispatch a batch when it says so and the instance is
// idle, else arm a wake-up at its Next.
func (e *cEngine) pump(i int) {
	in := e.insts[i]
	fn := e.fns[in.Function]
	for in.q.N > 0 && e.now-in.q.Front() > int64(e.cfg.RequestTimeout) {
		in.q.Pop()
		e.fail(fn)
	}
	if in.busy || in.q.N == 0 {
		e.maybeEnd(i)
		return
	}
	oldest := e.t(in.q.Front())
	d := in.pol.Decide(batching.Queue{Len: in.q.N, Oldest: oldest, EarliestDeadline: oldest.Add(fn.SLO.Threshold), Free: 1}, e.t(e.now))
	if d.Dispatch > 0 {
		e.start(i, min(d.Dispatch, in.q.N))
		return
	}
	if !d.Next.IsZero() {
		nx := max(int64(d.Next.Sub(e.cfg.Epoch)), e.now)
		if in.wakeAt < e.now || nx < in.wakeAt {
			in.wakeAt = nx
			e.h.Push(nx, cevWake, int32(i))
		}
	}
}

func (e *cEngine) noise() float64 {
	if e.sig == 0 {
		return 1
	}
	return math.Exp(e.sig*e.rng.NormFloat64() - e.sig*e.sig/2)
}

func (e *cEngine) start(i, n int) {
	in := e.insts[i]
	in.inflight = in.inflight[:0]
	for range n {
		in.inflight = append(in.inflight, in.q.Pop())
	}
	in.busy = true
	e.queued -= n
	e.inflight += n
	fn := e.fns[in.Function]
	for e.qbound && !in.draining && fn.pending.N > 0 && in.q.N < in.Batch {
		in.assigned++
		in.q.Push(fn.pending.Pop()) // room in its next batch: the function's oldest waiting request
	}
	e.fns[in.Function].rec.Batch(n)
	in.svc = max(int64(float64(in.curve.ServiceTime(n))*e.noise()), 1)
	in.doneAt = e.now + in.svc
	e.h.Push(in.doneAt, cevDone, int32(i))
}

// rerun moves instance i to configuration r (allocated by the caller): later batches run at r's
// service time, and a batch in flight finishes its remaining fraction of work at r's.
func (e *cEngine) rerun(i int, r cluster.Resources) error {
	in := e.insts[i]
	if r == in.res {
		return nil
	}
	c, err := e.curve(e.fns[in.Function], r)
	if err != nil {
		return err
	}
	if in.busy {
		old := in.curve.ServiceTime(len(in.inflight))
		left := float64(in.doneAt-e.now) / float64(in.svc)
		in.svc = max(int64(float64(in.svc)*float64(c.ServiceTime(len(in.inflight)))/float64(max(old, 1))), 1)
		in.doneAt = e.now + max(int64(left*float64(in.svc)), 0)
		e.h.Push(in.doneAt, cevDone, int32(i))
	}
	in.res, in.curve = r, c
	return nil
}

// unlend returns instance i's lent resources: it runs on its Launch.Resources again.
func (e *cEngine) unlend(i int) error {
	in := e.insts[i]
	if in.res == in.Resources {
		return nil
	}
	if err := e.cl.Release(in.Server, in.res.Sub(in.Resources)); err != nil {
		return err
	}
	return e.rerun(i, in.Resources)
}

func (e *cEngine) done(i int) {
	in := e.insts[i]
	fn := e.fns[in.Function]
	for _, a := range in.inflight {
		fn.rec.Completed(time.Duration(e.now-a), slo.TierVM)
	}
	e.inflight -= len(in.inflight)
	in.inflight = in.inflight[:0]
	in.busy = false
	e.pump(i)
}

// preempt stops instance i at once (policy.ClusterDecision.Preempt): it frees everything it holds and
// hands its queued and in-flight requests back to its function.
func (e *cEngine) preempt(i int) error {
	in := e.insts[i]
	fn := e.fns[in.Function]
	if !in.draining {
		e.releases++
	}
	e.preemptions++
	in.draining, in.ended, in.ready, in.wakeAt = true, true, false, -1
	back := make([]int64, 0, len(in.inflight)+in.q.N)
	if in.busy {
		back = append(back, in.inflight...) // the in-flight batch is older than the queue
		e.inflight -= len(in.inflight)
		e.queued += len(in.inflight)
		in.inflight, in.busy = in.inflight[:0], false
	}
	for in.q.N > 0 {
		back = append(back, in.q.Pop())
	}
	if err := e.cl.Release(in.Server, in.res); err != nil {
		return err
	}
	e.unlive(i)
	for _, a := range back {
		if j := e.pick(fn); j >= 0 {
			e.enqueue(j, a)
		} else {
			fn.pending.Push(a)
		}
	}
	return nil
}

// maybeEnd frees a draining instance once it has nothing left to do.
func (e *cEngine) maybeEnd(i int) {
	in := e.insts[i]
	if !in.draining || in.ended || in.busy || in.q.N > 0 {
		return
	}
	in.ended = true
	if err := e.cl.Release(in.Server, in.Resources); err != nil {
		panic(fmt.Sprintf("sim cluster: %v", err)) // the engine's own accounting is broken
	}
	e.unlive(i)
}

// unlive takes an ended instance i, whose resources are already released, out of its function's
// live instances and the run's accounting.
func (e *cEngine) unlive(i int) {
	fn := e.fns[e.insts[i].Function]
	if k := slices.Index(fn.live, i); k >= 0 {
		fn.live = slices.Delete(fn.live, k, k+1)
	}
	e.nLive--
	e.reweigh()
}

func (e *cEngine) becomeReady(i int) {
	in := e.insts[i]
	if in.draining {
		return
	}
	in.ready = true
	fn := e.fns[in.Function]
	for fn.pending.N > 0 {
		j := e.pick(fn)
		if j < 0 {
			break
		}
		e.enqueue(j, fn.pending.Pop())
	}
}

func (e *cEngine) curve(fn *cFn, r cluster.Resources) (profile.Curve, error) {
	if c, ok := fn.curves[r]; ok {
		return c, nil
	}
	c, err := fn.Profile.Curve(r.CPU, r.GPU)
	if err != nil {
		return profile.Curve{}, err
	}
	fn.curves[r] = c
	return c, nil
}

func (e *cEngine) control() error {
	// Close the rate window's current slot.
	v := policy.ClusterView{Cluster: e.cl.Clone(), Beta: e.beta}
	elapsed := min(time.Duration(e.now), e.cfg.RateWindow)
	for i, fn := range e.fns {
		for fn.pending.N > 0 && e.now-fn.pending.Front() > int64(e.cfg.RequestTimeout) {
			fn.pending.Pop()
			e.fail(fn)
		}
		var rateNow float64
		if e.now > 0 {
			rateNow = float64(fn.cur) / min(time.Duration(e.now), e.cfg.ControlPeriod).Seconds()
		}
		fn.win[fn.winAt] = fn.cur
		fn.winAt = (fn.winAt + 1) % len(fn.win)
		fn.cur = 0
		var n int
		for _, c := range fn.win {
			n += c
		}
		fv := policy.FunctionView{Index: i, Name: fn.Name, Profile: fn.Profile, SLO: fn.SLO.Threshold, Target: fn.SLO.Target, MeanRPS: fn.MeanRPS, Arrivals: fn.arrivals, RateNow: rateNow, Waiting: fn.pending.N}
		if elapsed > 0 {
			fv.Rate = float64(n) / elapsed.Seconds()
		}
		// Requests still waiting for a first instance count as load too.
		if elapsed > 0 && fn.pending.N > 0 && fv.Rate == 0 {
			fv.Rate = float64(fn.pending.N) / elapsed.Seconds()
		}
		for _, id := range fn.live {
			in := e.insts[id]
			if in.draining {
				continue
			}
			fv.Instances = append(fv.Instances, policy.InstanceView{ID: id, Launch: in.InstanceLaunch, Ready: in.ready, Queue: in.q.N, Resources: in.res})
		}
		v.Functions = append(v.Functions, fv)
	}
	d, err := e.pol.Control(v, e.t(e.now))
	if err != nil {
		return fmt.Errorf("policy %s: %w", e.pol.Name(), err)
	}
	for _, id := range d.Release {
		if id < 0 || id >= len(e.insts) || e.insts[id].ended {
			return fmt.Errorf("policy %s: release of unknown instance %d", e.pol.Name(), id)
		}
		in := e.insts[id]
		if in.draining {
			continue
		}
		in.draining = true
		e.releases++
		if err := e.unlend(id); err != nil {
			return fmt.Errorf("policy %s: release %d: %w", e.pol.Name(), id, err)
		}
		fn := e.fns[in.Function]
		// Requests queued on a released instance that has not started go back to the function.
		if !in.ready {
			for in.q.N > 0 {
				fn.pending.Push(in.q.Pop())
			}
		}
		e.maybeEnd(id)
	}
	for _, id := range d.Preempt {
		if id < 0 || id >= len(e.insts) || e.insts[id].ended {
			return fmt.Errorf("policy %s: preemption of unknown instance %d", e.pol.Name(), id)
		}
		if err := e.preempt(id); err != nil {
			return fmt.Errorf("policy %s: preempt %d: %w", e.pol.Name(), id, err)
		}
	}
	if d.Lend != nil {
		// Take back the lent resources that change before placing the launches.
		for _, fn := range e.fns {
			for _, id := range fn.live {
				in := e.insts[id]
				want, ok := d.Lend[id]
				if !ok || in.draining {
					want = in.Resources
				}
				if want != in.res {
					if err := e.unlend(id); err != nil {
						return fmt.Errorf("policy %s: lend %d: %w", e.pol.Name(), id, err)
					}
				}
			}
		}
	}
	for _, l := range d.Launch {
		if l.Function < 0 || l.Function >= len(e.fns) {
			return fmt.Errorf("policy %s: launch for unknown function %d", e.pol.Name(), l.Function)
		}
		fn := e.fns[l.Function]
		c, err := e.curve(fn, l.Resources)
		if err != nil {
			return fmt.Errorf("policy %s: launch %s: %w", e.pol.Name(), fn.Name, err)
		}
		if err := e.cl.Place(l.Server, l.Resources); err != nil {
			return fmt.Errorf("policy %s: launch %s: %w", e.pol.Name(), fn.Name, err)
		}
		b := max(l.Batch, 1)
		in := &cInst{InstanceLaunch: l, curve: c, res: l.Resources, pol: batching.NewFixed(b, l.Timeout), wakeAt: -1, weight: l.Bounds.Up}
		e.insts = append(e.insts, in)
		id := len(e.insts) - 1
		fn.live = append(fn.live, id)
		e.nLive++
		e.launches++
		e.byBatch[b]++
		e.h.Push(e.now+int64(e.cfg.StartDelay), cevReady, int32(id))
	}
	if err := e.lend(d.Lend); err != nil {
		return fmt.Errorf("policy %s: %w", e.pol.Name(), err)
	}
	e.reweigh()
	for _, fn := range e.fns {
		for _, id := range fn.live {
			in := e.insts[id]
			if w, ok := d.Weights[id]; ok {
				in.weight = w
			}
			in.assigned = 0
		}
	}
	if e.cfg.StartDelay == 0 {
		for id, in := range e.insts {
			if !in.ready && !in.ended && !in.draining {
				e.becomeReady(id)
			}
		}
	}
	return nil
}

// lend gives the live instances their lent configurations (policy.ClusterDecision.Lend), after the
// launches; the changed ones were taken back before.
func (e *cEngine) lend(m map[int]cluster.Resources) error {
	ids := slices.Sorted(maps.Keys(m)) // in order: a rerun pushes events
	for _, id := range ids {
		r := m[id]
		if id < 0 || id >= len(e.insts) || e.insts[id].ended {
			return fmt.Errorf("lend to unknown instance %d", id)
		}
		in := e.insts[id]
		if in.draining || r == in.res {
			continue
		}
		if r.CPU < in.Resources.CPU || r.GPU < in.Resources.GPU {
			return fmt.Errorf("lend %+v to instance %d below its launch %+v", r, id, in.Resources)
		}
		if err := e.cl.Place(in.Server, r.Sub(in.Resources)); err != nil {
			return fmt.Errorf("lend %+v to instance %d: %w", r, id, err)
		}
		if err := e.rerun(id, r); err != nil {
			return fmt.Errorf("lend to instance %d: %w", id, err)
		}
	}
	return nil
}

func (e *cEngine) finish() *ClusterResult {
	dur := time.Duration(e.now)
	res := &ClusterResult{BatchInstances: e.byBatch}
	agg := slo.NewRecorder(slo.Spec{Threshold: e.fns[0].SLO.Threshold, Target: e.fns[0].SLO.Target})
	var cold int64
	for _, fn := range e.fns {
		// Requests never served (still pending at the end: no instance could be placed) fail.
		for fn.pending.N > 0 {
			fn.pending.Pop()
			e.fail(fn)
		}
		s := fn.rec.Summary(e.pol.Name(), fn.Trace, dur)
		s.ColdStarts = fn.cold
		s.Extra = map[string]float64{"cold_start_requests": float64(fn.cold)}
		res.Functions = append(res.Functions, s)
		agg.Merge(fn.rec)
		cold += fn.cold
	}
	s := agg.Summary(e.pol.Name(), e.cfg.Trace, dur)
	s.SLO.ThresholdMS = 0 // per function; see Functions
	s.ColdStarts = cold
	s.Extra = map[string]float64{
		"launches":            float64(e.launches),
		"releases":            float64(e.releases),
		"preemptions":         float64(e.preemptions),
		"timeouts":            float64(e.timeouts),
		"cold_start_requests": float64(cold),
	}
	if e.now > 0 {
		T := float64(e.now)
		s.Extra["mean_instances"] = e.instArea / T
		s.Extra["mean_active_servers"] = e.activeArea / T
		s.Extra["mean_alloc_resource"] = e.allocArea / T
	}
	// §5.3's fragment ratio counts what the functions' own instances hold at their launch
	// configurations: resources spares and loans (infless.Spares, infless.Lend) fill are free
	// space given extra work, so they count as fragments here and as allocated in
	// fragment_ratio_filled (equal for policies without spares or loans).
	if e.capArea > 0 {
		s.Extra["fragment_ratio"] = 1 - (e.allocArea-e.fillArea)/e.capArea
		s.Extra["fragment_ratio_filled"] = 1 - e.allocArea/e.capArea
	}
	// The same per dimension: unallocated CPU threads (GPU SMs) of the active servers over their
	// CPU threads (GPU SMs). β-weighted, a server is 93 % GPU, so fragment_ratio ≈ fragment_gpu.
	if e.capCPUArea > 0 {
		s.Extra["fragment_cpu"] = 1 - (e.usedCPUArea-e.fillCPUArea)/e.capCPUArea
		s.Extra["fragment_cpu_filled"] = 1 - e.usedCPUArea/e.capCPUArea
	}
	if e.capGPUArea > 0 {
		s.Extra["fragment_gpu"] = 1 - (e.usedGPUArea-e.fillGPUArea)/e.capGPUArea
		s.Extra["fragment_gpu_filled"] = 1 - e.usedGPUArea/e.capGPUArea
	}
	// Throughput per unit of resource: completed requests per β-weighted resource-second of the
	// active servers — Eq. 2's objective counts a used server's whole capacity, "the fragments on
	// each server that cannot be used" included — and per resource-second held by instances
	// (§5.2's "RPS divided by its occupied resources", blind to fragments).
	if e.capArea > 0 {
		s.Extra["rps_per_resource"] = float64(s.Completed) / (e.capArea / 1e9)
	}
	if e.allocArea > 0 {
		s.Extra["rps_per_alloc_resource"] = float64(s.Completed) / (e.allocArea / 1e9)
	}
	perFunctionExtra(s.Extra, e.fns, res.Functions)
	res.Summary = s
	return res
}

// perFunctionExtra puts every function's attainment into the aggregate's Extra, as
// "per_function.<name>.attainment" and ".target", with the worst margin over the targets in
// "per_function.worst_margin" (attainment − target; < 0: some function missed its target):
// attainment is required per function (issue #17), and the aggregate can hide a function that
// misses.
func perFunctionExtra(x map[string]float64, fns []*cFn, sums []slo.Summary) {
	worst := math.Inf(1)
	for i, fn := range fns {
		a := sums[i].SLOAttainment
		x["per_function."+fn.Name+".attainment"] = a
		x["per_function."+fn.Name+".target"] = fn.SLO.Target
		worst = min(worst, a-fn.SLO.Target)
	}
	if len(fns) > 0 {
		x["per_function.worst_margin"] = worst
	}
}
