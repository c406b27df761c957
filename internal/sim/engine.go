package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/sim/des"

	"github.com/sloserve/sloserve/internal/admission"
	"github.com/sloserve/sloserve/internal/analytic"
	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/dispatch"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// Arrivals yields request arrival times as offsets from the start of the run, non-decreasing.
// internal/trace's generators satisfy it.
type Arrivals interface {
	// Next returns the next arrival offset, or ok false when the trace is exhausted.
	Next() (at time.Duration, ok bool)
}

// Result is the outcome of one run.
type Result struct {
	// Summary is the shared Summary; Extra holds vm_instance_seconds, mean_vm_instances,
	// serverless_busy_seconds, launches, terminations, spot_interruptions and timeouts.
	Summary slo.Summary
	// Latency is the latency histogram of completed requests (for CCDF plots).
	Latency *slo.Histogram
	// Series is the time series sampled every Config.SeriesPeriod.
	Series Series
	// Plans lists the serverless buffer plans the policy put in force, in order, when its
	// serverless batching reports them (planReporter: the batch policy).
	Plans []analytic.PlanChange
	// Stop is, for a run with twins (Config.Twins), ErrMissBudget or ErrCostBudget when the run
	// itself would have stopped there (Run returns the error when it has no twins); the Summary
	// is then not the run's. Twins holds each twin's outcome, in Config.Twins' order.
	Stop  error
	Twins []TwinResult
}

// planReporter is a serverless batching policy that reports the plans it put in force
// (analytic.BufferPolicy).
type planReporter interface {
	Plans() []analytic.PlanChange
}

var _ planReporter = (*analytic.BufferPolicy)(nil)

// vmType is an instance type the run has used, with everything the engine needs about it.
type vmType struct {
	account // the bill (its name has /spot for the spot market)
	backend profile.Backend
	weight  float64 // capacity at batch 1, requests per second
	ready   int     // ready (accepting) instances of this type
	alive   int     // launching or ready
}

type vmInst struct {
	id        string
	typ       int
	spec      provider.Spec
	state     provider.State
	launched  int64
	ready     int64
	ended     int64 // 0 while alive
	busy      int
	accepting bool
	credits   float64
	creditAt  int64
}

type batchRec struct {
	arr   []int64
	exp   []int64 // admission's estimates of the requests' answers (VM batches)
	est   float64 // admission's cost estimate of the batch at dispatch, ns
	inst  int32
	start int64
	next  int32 // free list link
	stall int64 // the stall total (stallState.cum) its completion was last scheduled against
}

type engine struct {
	ctx   context.Context
	cfg   Config
	cat   *cost.Catalog
	model profile.Model
	pol   Policy
	arr   Arrivals

	now      int64
	tOff     int64     // the last instant t converted (now's, never an older offset's) …
	tVal     time.Time // … and its time, cfg.Epoch + tOff
	tOff2    int64     // the last other offset converted (e.g. the queue's front) …
	tVal2    time.Time // … its time …
	tOK2     bool      // … once one was
	ep       epoch     // converts offsets to times
	h        des.Heap
	rec      *slo.Recorder
	period   slo.Histogram
	sloNS    int64
	timeout  int64
	noiseSig float64
	noiseBuf [noiseBlock]float64 // log-normal factors drawn ahead by the run itself (fillNoise)
	noiseCur []float64           // the factors being handed out: a shared block or noiseBuf …
	noiseAt  int                 // … the next one's index
	noiseSeq *noiseSeq           // the shared sequence the blocks come from (nil: drawn here)
	noiseBlk int                 // the next shared block's index
	rngSvc   *rand.Rand
	rngCloud *rand.Rand
	st       stallState // Config.Stalls

	// VM tier.
	vmBatch   batching.Policy
	vq        des.Ring
	vqExp     des.Ring            // per queued request: admission's estimate of its answer (Verdict.Done), 0 if none
	adm       admission.Estimator // the one admission estimator (the live gateway's), on the VM tier
	estSum    float64             // Σ admission's cost estimate of the batches in flight at dispatch, ns
	startSum  float64             // Σ their dispatch offsets, ns
	types     []*vmType
	typeIdx   map[string]int
	insts     []vmInst
	live      []int // indices of the instances not ended (ended == 0), increasing; see liveDel
	instIdx   map[string]int
	freeSlots int
	nextID    int
	vmWake    int64
	vmWakes   wakeSet
	cands     []dispatch.Instance
	picker    dispatch.Picker
	leastOut  bool // picker is the default, dispatch.LeastOutstanding (pickLeastOutstanding)
	candIdx   []int

	// Serverless tier.
	sl        *Serverless
	slBatch   batching.Policy
	sq        des.Ring
	slMem     int
	slCurve   profile.Curve
	keepAlive int64
	fnIdle    des.Ring // idle-since times of warm idle instances, oldest first
	fnBusy    int
	slWake    int64
	slWakes   wakeSet
	slCost    float64
	slBusyNS  int64
	cold      int64

	batches   []batchRec
	freeBatch int32
	inflight  int
	tbuf      []time.Time

	// Load sampling.
	sample     autoscale.Sample
	history    []autoscale.Sample // the last HistoryLen samples, a window of histBuf
	histBuf    []autoscale.Sample
	inSystem   int
	lastChange int64
	area       float64
	vmArea     float64
	upArea     float64
	mb         int                   // VM batching policy's MaxBatch after its last decision
	vmInert    bool                  // vmBatch is inert (inert): its constant MaxBatch is vmMax
	slInert    bool                  // slBatch is inert
	vmMax      int                   // vmBatch.MaxBatch() when vmInert
	vmFixed    *batching.Fixed       // vmBatch when it is Fixed
	slFixed    *batching.Fixed       // slBatch when it is Fixed
	vmOff      batching.OffsetPolicy // vmBatch when it decides on offsets (its base set to the epoch)
	slOff      batching.OffsetPolicy // slBatch when it does
	vr         VerdictRouter         // pol.Router when it routes on the verdict alone
	vc         viewCache
	blocked    bool // the VM policy wants to dispatch but no slot is free
	busySlots  int
	fleet      []autoscale.Member
	scaleAt    int64

	// Counters.
	arrivalsDone bool
	launches     int64
	terms        int64
	interrupts   int64
	timeouts     int64
	aliveArea    float64 // instance-ns of launching+ready instances
	alive        int
	lastAlive    int64

	series   Series
	seriesAt int64
	perArr   int
	perMet   int
	perDone  int

	err   error
	twins []*twinBook // Config.Twins' bills
	stop  error       // with twins: the run's own early stop (Result.Stop)
}

// Run simulates pol serving model on the virtual cloud cat, with arrivals from arr, and returns
// the Summary, the latency histogram and the time series. It is deterministic for a given
// cfg.Seed. It stops early with ctx's error when ctx is cancelled.
func Run(ctx context.Context, cfg Config, cat *cost.Catalog, model profile.Model, pol Policy, arr Arrivals) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cat == nil {
		c := cost.DefaultCatalog()
		cat = &c
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = DefaultEpoch
	}
	e := &engine{
		ctx: ctx, cfg: cfg, cat: cat, model: model, pol: pol, arr: arr, tVal: cfg.Epoch, ep: newEpoch(cfg.Epoch),
		rec:       slo.NewRecorder(cfg.SLO),
		sloNS:     int64(cfg.SLO.Threshold),
		timeout:   int64(cfg.RequestTimeout),
		rngSvc:    rand.New(rand.NewPCG(cfg.Seed, 0x5e541ce)),
		rngCloud:  rand.New(rand.NewPCG(cfg.Seed, 0xc10d)),
		typeIdx:   map[string]int{},
		instIdx:   map[string]int{},
		vmWake:    -1,
		slWake:    -1,
		freeBatch: -1,
		scaleAt:   -1,
	}
	for _, tw := range cfg.Twins {
		e.twins = append(e.twins, &twinBook{tw: tw, idx: map[string]int{}})
	}
	if cfg.NoiseCV > 0 {
		e.noiseSig = math.Sqrt(math.Log1p(cfg.NoiseCV * cfg.NoiseCV))
		if len(cfg.NoiseFactors) == 0 && len(cfg.LaunchNoiseFactors) == 0 {
			e.noiseSeq = sharedNoise.seq(cfg.Seed, e.noiseSig)
		}
	}
	e.vmBatch = batching.Innermost(pol.Batching) // the engine reads no reasons
	e.picker = pol.Dispatcher
	e.leastOut = e.picker == nil
	if e.picker == nil {
		p, err := dispatch.New(dispatch.DefaultName)
		if err != nil {
			return nil, err
		}
		e.picker = p
	}
	if e.vmBatch == nil {
		e.vmBatch = batching.NewNone()
	}
	e.mb = max(e.vmBatch.MaxBatch(), 1)
	e.vmInert, e.vmMax = inert(e.vmBatch), e.vmBatch.MaxBatch()
	e.vmFixed, _ = e.vmBatch.(*batching.Fixed)
	e.vmOff = e.offsetPolicy(e.vmBatch)
	e.adm.SetBase(e.ep.t) // its outcomes on offsets (OutcomeAt)
	e.vr, _ = pol.Router.(VerdictRouter)
	if pol.Serverless != nil {
		if model.Serverless == nil {
			return nil, fmt.Errorf("policy %s uses the serverless tier but model %s has no serverless profile", pol.Name, model.Name)
		}
		s := *pol.Serverless
		e.sl = &s
		e.slMem = cat.Serverless.ClampMemory(s.MemoryMB)
		c, err := model.Serverless.At(e.slMem)
		if err != nil {
			return nil, fmt.Errorf("policy %s: serverless tier: %w", pol.Name, err)
		}
		e.slCurve = c
		e.slBatch = batching.Innermost(s.Batching)
		if e.slBatch == nil {
			e.slBatch = batching.NewNone()
		}
		e.slInert = inert(e.slBatch)
		e.slFixed, _ = e.slBatch.(*batching.Fixed)
		e.slOff = e.offsetPolicy(e.slBatch)
		e.keepAlive = int64(cat.Serverless.KeepAlive)
		if s.KeepAlive > 0 {
			e.keepAlive = int64(s.KeepAlive)
		}
	}
	if cfg.SeriesPeriod > 0 {
		e.seriesAt = int64(cfg.SeriesPeriod)
	}
	for _, sp := range pol.Initial {
		i, err := e.launch(sp)
		if err != nil {
			return nil, err
		}
		e.becomeReady(i)
	}
	e.sample = autoscale.Sample{Start: e.t(0), Period: cfg.SamplePeriod}
	e.h.Push(int64(cfg.SamplePeriod), evSample, 0)
	e.startStalls()
	if pol.Scaler != nil {
		e.scale()
	}
	if err := e.loop(); err != nil {
		if errors.Is(err, errAllStopped) {
			return e.stopped(), nil
		}
		return nil, err
	}
	return e.finish(), nil
}

// t converts an offset to the virtual wall-clock time policies see. Most calls ask for the
// current instant several times per event; its conversion is kept (time.Time.Add was a
// tenth of the scoreboard's CPU, pprof).
func (e *engine) t(off int64) time.Time {
	if off != e.now {
		// The other instant asked for most is the queue's front, the same across the pumps
		// until it leaves: a second slot keeps it.
		if off != e.tOff2 || !e.tOK2 {
			e.tOff2, e.tVal2, e.tOK2 = off, e.ep.at(off), true
		}
		return e.tVal2
	}
	if off != e.tOff {
		e.tOff, e.tVal = off, e.ep.at(off)
	}
	return e.tVal
}

// epoch converts offsets to times, cfg.Epoch + offset: time.Time.Add was a tenth of the
// scoreboard's CPU (pprof, issue #17). For an epoch in UTC without a monotonic reading (the
// default) the sum's seconds and nanoseconds are built with time.Unix, which inlines, and give
// the identical Time (the same wall, ext and location: Time ==, TestEpochMatchesAdd); any other
// epoch adds.
type epoch struct {
	t       time.Time
	fast    bool
	sec, ns int64 // t's Unix seconds and nanoseconds, when fast
}

func newEpoch(t time.Time) epoch {
	ep := epoch{t: t, sec: t.Unix(), ns: int64(t.Nanosecond())}
	ep.fast = time.Unix(ep.sec, ep.ns).UTC() == t
	return ep
}

func (ep *epoch) at(off int64) time.Time {
	if ep.fast {
		return time.Unix(ep.sec+off/1e9, ep.ns+off%1e9).UTC()
	}
	return ep.t.Add(time.Duration(off))
}

// sub is t.Sub(ep.t) in nanoseconds. For a fast epoch (no monotonic reading, so Sub takes the
// wall clocks) it subtracts the Unix seconds and nanoseconds, which inline, where Sub adds the
// difference back to check for overflow (time.Time.Sub was 3.6 % of the scoreboard's CPU); past
// ±2³³ s, where Sub saturates, it asks Sub (TestEpochSubMatchesSub).
func (ep *epoch) sub(t time.Time) int64 {
	if ep.fast {
		if s := t.Unix() - ep.sec; s > -1<<33 && s < 1<<33 {
			return s*1e9 + int64(t.Nanosecond()) - ep.ns
		}
	}
	return int64(t.Sub(ep.t))
}

func (e *engine) off(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return e.ep.sub(t)
}

func (e *engine) loop() error {
	next, ok := e.arr.Next()
	e.arrivalsDone = !ok
	var steps uint64
	for {
		steps++
		if steps&0xffff == 0 {
			if err := e.ctx.Err(); err != nil {
				return err
			}
			if e.cfg.Progress != nil {
				e.cfg.Progress(time.Duration(e.now))
			}
		}
		if e.err != nil {
			return e.err
		}
		if ok && (e.h.Len() == 0 || int64(next) <= e.h.Top().At) {
			at := int64(next)
			if at < e.now {
				return fmt.Errorf("arrivals go back in time: %v after %v", next, time.Duration(e.now))
			}
			e.advance(at)
			e.arrive()
			next, ok = e.arr.Next()
			if !ok {
				e.arrivalsDone = true
			}
			continue
		}
		if e.h.Len() == 0 || (!ok && !e.busy()) {
			e.arrivalsDone = true
			return nil
		}
		ev := e.h.Pop()
		e.advance(ev.At)
		switch ev.Kind {
		case evVMDone:
			if !e.stallDelayed(ev.ID) {
				e.vmDone(ev.ID)
			}
		case evSLDone:
			e.slDone(ev.ID)
		case evReady:
			e.becomeReady(int(ev.ID))
			e.pumpVM()
		case evWakeVM:
			e.vmWakes.del(ev.At)
			if ev.At == e.vmWake {
				e.vmWake = -1
			}
			e.pumpVM()
		case evWakeSL:
			e.slWakes.del(ev.At)
			if ev.At == e.slWake {
				e.slWake = -1
			}
			e.pumpSL()
		case evSample:
			e.tick()
		case evScale:
			// A call asked for at a sample boundary is the tick's own (after the sample closes),
			// as the live controller, which asks at samples only, makes it.
			if ev.At == e.scaleAt && ev.At != e.off(e.sample.Start)+int64(e.cfg.SamplePeriod) {
				e.scaleAt = -1
				e.scale()
			}
		case evSpotNotice:
			e.spotNotice(int(ev.ID))
		case evSpotReclaim:
			e.spotReclaim(int(ev.ID))
		case evStall:
			e.stall()
		}
	}
}

// advance moves the clock to at, integrating the time-averaged quantities.
func (e *engine) advance(at int64) {
	if dt := at - e.lastChange; dt > 0 {
		e.area += float64(e.inSystem) * float64(dt)
		e.vmArea += float64(e.busySlots) * float64(dt)
		up := e.busySlots
		if e.blocked {
			up += (e.vq.N + e.mb - 1) / e.mb
		}
		e.upArea += float64(up) * float64(dt)
		e.lastChange = at
	}
	e.now = at
}

func (e *engine) setAlive(delta int) {
	e.aliveArea += float64(e.alive) * float64(e.now-e.lastAlive)
	e.lastAlive = e.now
	e.alive += delta
}

// ---- arrivals and routing ----

func (e *engine) arrive() {
	e.sample.Arrivals++
	e.perArr++
	route := RouteVM
	// The times, and the router's view, only when a router or the estimate needs them (most
	// arrivals meet an empty queue and a free slot: converting their times and copying the view
	// were a tenth of the scoreboard's CPU, issue #17).
	mb := e.maxBatch()
	slots := e.sums(mb).slots
	queued, busy := e.vq.N+1, min(e.busySlots, slots)
	admit, exp := true, int64(0) // exp: the offset of the verdict's Done, 0 if none
	if e.vr != nil {
		route, exp = e.routeVerdict(slots, queued, busy)
	} else if e.pol.Router != nil {
		verdict, ok := admission.Immediate(queued, busy, slots)
		route, exp = e.routeBy(mb, slots, verdict, ok)
	} else {
		// Without a router only the verdict's Admit and Done count: on offsets, and no Verdict
		// when Immediate would answer (it admits then).
		if !admission.Immediately(queued, busy, slots) {
			admit, exp = admission.AdmitOffsets(e.admissionFacts(slots), e.now+e.sloNS, e.now)
		}
		switch {
		case e.pol.Scaler == nil && len(e.pol.Initial) == 0 && e.sl != nil:
			route = RouteServerless
		case !admit:
			route = RouteReject // the live gateway's 429
		}
	}
	if route == RouteServerless && e.sl == nil {
		route = RouteReject
	}
	switch route {
	case RouteVM:
		e.inSystem++
		e.vq.Push(e.now)
		e.vqExp.Push(exp)
		e.pumpVM()
	case RouteServerless:
		e.inSystem++
		e.sq.Push(e.now)
		e.pumpSL()
	default:
		e.rec.Rejected()
		e.sample.Missed++
		e.perDone++
	}
}

// routeBy asks the policy's Router where an arriving request goes, with the admission verdict
// (Immediate's when ok, else Admit's) in its view of the VM tier; it returns the route and the
// offset of the verdict's Done (0 if none).
func (e *engine) routeBy(mb, slots int, verdict admission.Verdict, ok bool) (Route, int64) {
	now := e.t(e.now)
	deadline := e.ep.at(e.now + e.sloNS) // now.Add(threshold), by the epoch's fast path
	if !ok {
		verdict = admission.Admit(e.admissionFacts(slots), deadline, now)
	}
	var exp int64
	if !verdict.Done.IsZero() {
		exp = e.off(verdict.Done)
	}
	v := e.viewFor(mb)
	v.Admission = verdict
	return e.pol.Router.Route(Request{Arrival: now, Deadline: deadline}, v, now), exp
}

// routeVerdict is routeBy for a VerdictRouter (vr): the verdict on offsets, without the
// request's times and the view it does not read.
func (e *engine) routeVerdict(slots, queued, busy int) (Route, int64) {
	if reason, ok := admission.ImmediateReason(queued, busy, slots); ok {
		return e.vr.RouteVerdict(true, reason), 0
	}
	admit, reason, done := admission.EstimateOffsets(e.admissionFacts(slots), e.now+e.sloNS, e.now)
	return e.vr.RouteVerdict(admit, reason), done
}

// admissionFacts are the one estimator's facts for a request arriving now (one row each): the
// queue with it, the ready instances' slots and the batches in flight, whose time left is
// estimated from admission's own cost estimate at dispatch (never the simulator's service
// time), as the live gateway estimates it.
func (e *engine) admissionFacts(slots int) admission.Facts {
	busy := min(e.busySlots, slots)
	left := max(e.estSum-(float64(e.busySlots)*float64(e.now)-e.startSum), 0)
	return admission.Facts{Queued: e.vq.N + 1, Rows: 1, MaxBatch: e.mb, Slots: slots, Busy: busy,
		BusyLeft: time.Duration(left), Cost: e.adm.Cost(), Budget: e.cfg.SLO.Threshold, Margin: e.adm.Margin()}
}

// view returns the VM tier's state for a Router.
func (e *engine) view() TierView { return e.viewFor(e.maxBatch()) }

// viewFor is view with the policy's MaxBatch now, mb.
func (e *engine) viewFor(mb int) TierView {
	c := e.sums(mb)
	return TierView{QueueLen: e.vq.N, FreeSlots: e.freeSlots, MaxBatch: mb, Ready: c.ready, Slots: c.slots, BatchTime: c.batchTime}
}

// maxBatch is the VM batching policy's MaxBatch now.
func (e *engine) maxBatch() int {
	if e.vmInert {
		return e.vmMax
	}
	return e.vmBatch.MaxBatch()
}

// sums returns view's sums over the ready instance types for MaxBatch mb (viewCache).
func (e *engine) sums(mb int) *viewCache {
	c := &e.vc
	if !c.ok || c.gen != c.readyGen || c.mb != mb {
		c.ok, c.gen, c.mb, c.ready, c.slots, c.batchTime = true, c.readyGen, mb, 0, 0, 0
		for _, ty := range e.types {
			if ty.ready == 0 {
				continue
			}
			c.ready += ty.ready
			c.slots += ty.ready * max(ty.backend.Slots, 1)
			if bt := ty.backend.Curve.ServiceTime(max(mb, 1)); bt > c.batchTime {
				c.batchTime = bt
			}
		}
	}
	return c
}

// viewCache keeps view's sums over the instance types, which change only when an instance
// becomes ready or stops accepting (readyGen counts those) or the policy's MaxBatch changes:
// recomputing them at every arrival, a service-time lookup per type, was 4 % of the
// scoreboard's CPU (pprof, issue #17).
type viewCache struct {
	readyGen, gen uint64
	ok            bool
	mb            int
	ready, slots  int
	batchTime     time.Duration
}

// offsetPolicy returns p as an OffsetPolicy counting from the run's epoch, or nil when it is
// none.
func (e *engine) offsetPolicy(p batching.Policy) batching.OffsetPolicy {
	op, ok := p.(batching.OffsetPolicy)
	if !ok {
		return nil
	}
	op.SetBase(e.ep.t)
	return op
}

// inert reports whether p is one of batching's stateless policies (None, Fixed): its Decide is
// a pure function of its arguments that answers an empty queue with an empty Decision, its
// Observe does nothing and its MaxBatch never changes. The engine skips those calls for them —
// exactly: the results are known (an interface call per event was a tenth of the scoreboard's
// CPU, pprof, issue #17).
func inert(p batching.Policy) bool {
	switch p.(type) {
	case batching.None, *batching.Fixed:
		return true
	}
	return false
}

// ---- VM tier ----

func (e *engine) typeFor(name string) (int, error) {
	if i, ok := e.typeIdx[name]; ok {
		return i, nil
	}
	base, spot := cost.ParseType(name)
	it, ok := e.cat.Type(base)
	if !ok {
		return 0, fmt.Errorf("instance type %q is not in the catalog", base)
	}
	b, ok := e.model.VM[base]
	if !ok { // a managed-hosting type ("ml.c5.large") runs on its EC2 type's machine
		b, ok = e.model.VM[cost.HostedOn(base)]
	}
	if !ok {
		return 0, fmt.Errorf("model %s has no profile for instance type %q (have %v)", e.model.Name, base, e.model.Types())
	}
	if spot && it.SpotPricePerHour <= 0 {
		if _, ok := e.cfg.SpotPrices[base]; !ok {
			return 0, fmt.Errorf("instance type %q is not offered on the spot market", base)
		}
	}
	ty := &vmType{account: account{name: name, it: it, billing: e.cat.BillingFor(it), spot: spot}, backend: b}
	if spot {
		if s, ok := e.cfg.SpotPrices[base]; ok {
			ty.series = &s
		}
	}
	if err := e.twinTypes(ty); err != nil {
		return 0, err
	}
	if ty.backend.Slots < 1 {
		ty.backend.Slots = 1
	}
	if t1 := b.Curve.ServiceTime(1); t1 > 0 {
		ty.weight = float64(ty.backend.Slots) / t1.Seconds()
	}
	e.types = append(e.types, ty)
	e.typeIdx[name] = len(e.types) - 1
	return len(e.types) - 1, nil
}

func (e *engine) launch(sp provider.Spec) (int, error) {
	ti, err := e.typeFor(sp.Type)
	if err != nil {
		return 0, err
	}
	ty := e.types[ti]
	e.nextID++
	in := vmInst{id: "vm-" + strconv.Itoa(e.nextID), typ: ti, spec: sp, state: provider.StateLaunching, launched: e.now}
	in.spec.Tier = provider.TierVM
	if b := ty.it.Burst; b != nil {
		in.credits, in.creditAt = b.InitialCredits, e.now
	}
	e.insts = append(e.insts, in)
	i := len(e.insts) - 1
	e.live = append(e.live, i)
	e.instIdx[in.id] = i
	ty.alive++
	e.setAlive(+1)
	e.launches++
	if ty.spot && e.cat.Spot.InterruptionsPerHour > 0 {
		wait := e.rngCloud.ExpFloat64() / e.cat.Spot.InterruptionsPerHour * float64(time.Hour)
		if wait < 1<<61 {
			e.h.Push(e.now+int64(wait), evSpotNotice, int32(i))
		}
	}
	return i, nil
}

func (e *engine) becomeReady(i int) {
	in := &e.insts[i]
	if in.state != provider.StateLaunching {
		return
	}
	in.state = provider.StateReady
	in.ready = e.now
	in.accepting = true
	ty := e.types[in.typ]
	ty.ready++
	e.vc.readyGen++
	e.freeSlots += ty.backend.Slots - in.busy
}

// stopAccepting takes an instance out of dispatch.
func (e *engine) stopAccepting(in *vmInst) {
	if !in.accepting {
		return
	}
	in.accepting = false
	ty := e.types[in.typ]
	ty.ready--
	e.vc.readyGen++
	e.freeSlots -= ty.backend.Slots - in.busy
}

// end terminates an instance now and bills it.
func (e *engine) end(i int) {
	in := &e.insts[i]
	if in.ended != 0 || in.state == provider.StateTerminated {
		return
	}
	e.stopAccepting(in)
	in.state = provider.StateTerminated
	in.ended = e.now
	if in.ended != 0 {
		e.liveDel(i)
	}
	ty := e.types[in.typ]
	ty.alive--
	e.setAlive(-1)
	used := time.Duration(e.now - in.launched)
	ty.charge(in.launched, used)
	for _, t := range e.twins {
		t.accts[t.of[in.typ]].charge(in.launched, used)
	}
	delete(e.instIdx, in.id)
}

// liveDel drops instance i from the live list. The instance table is append-only (events name
// instances by index), so over a long run most of it is ended instances: the loops that only
// care about live ones (pick, scale, billSoFar, series, interruptions) scan the live list, in
// the table's order (the same ties and picks), instead of the whole table (scanning it was a
// tenth of the scoreboard's CPU, issue #17).
func (e *engine) liveDel(i int) {
	k, ok := slices.BinarySearch(e.live, i)
	if ok {
		e.live = slices.Delete(e.live, k, k+1)
	}
}

func (e *engine) terminate(id string) {
	i, ok := e.instIdx[id]
	if !ok {
		return
	}
	in := &e.insts[i]
	e.terms++
	if in.busy > 0 {
		e.stopAccepting(in)
		in.state = provider.StateDraining
		return
	}
	e.end(i)
}

func (e *engine) spotNotice(i int) {
	in := &e.insts[i]
	if in.ended != 0 {
		return
	}
	e.interrupts++
	e.stopAccepting(in)
	in.state = provider.StateInterrupted
	e.h.Push(e.now+int64(e.cat.Spot.Notice), evSpotReclaim, int32(i))
}

func (e *engine) spotReclaim(i int) { e.end(i) }

// pumpVM asks the VM batching policy what to do until it waits or nothing can be dispatched.
func (e *engine) pumpVM() {
	for {
		for e.vq.N > 0 && e.now-e.vq.Front() > e.timeout {
			e.vq.Pop()
			e.vqExp.Pop()
			e.adm.OutcomeAt(true, e.now)
			e.fail()
		}
		n := e.vq.N
		if n == 0 && e.vmInert { // its Decision is empty: no dispatch, no wake-up
			e.blocked = false
			return
		}
		disp, nx := e.decide(e.vmBatch, e.vmFixed, e.vmOff, e.vmInert, &e.vq, e.freeSlots)
		if !e.vmInert {
			e.mb = max(e.vmBatch.MaxBatch(), 1)
		}
		e.blocked = disp > 0 && n > 0 && e.freeSlots == 0
		if nx >= 0 && (disp <= 0 || e.freeSlots == 0 || nx > e.now) {
			nx = max(nx, e.now)
			if e.vmWake < e.now || nx < e.vmWake {
				if nx > e.now || disp <= 0 {
					e.vmWake = nx
					if e.vmWakes.add(nx) {
						e.h.Push(nx, evWakeVM, 0)
					}
				}
			}
		}
		if disp <= 0 || n == 0 || e.freeSlots == 0 || e.stalled() {
			return
		}
		e.dispatchVM(min(disp, n))
	}
}

// decide asks a tier's batching policy p about its queue rq with free slots: how many to
// dispatch, and the offset to ask again at (-1: none). An inert policy (fixed: p when it is
// Fixed) and an OffsetPolicy (op: p when it is one) decide on the offsets themselves
// (DecideOffsets, exactly their Decide), any other on the times.
func (e *engine) decide(p batching.Policy, fixed *batching.Fixed, op batching.OffsetPolicy, inert bool, rq *des.Ring, free int) (dispatch int, next int64) {
	n := rq.N
	switch {
	case fixed != nil:
		var front int64
		if n > 0 {
			front = rq.Front()
		}
		return fixed.DecideOffsets(n, front, front+e.sloNS, e.now)
	case inert:
		return batching.None{}.DecideOffsets(n, e.now)
	case op != nil:
		var front int64
		if n > 0 {
			front = rq.Front()
		}
		return op.DecideOffsets(n, front, front+e.sloNS, e.now)
	}
	q := batching.Queue{Len: n, Free: free}
	if n > 0 {
		q.Oldest = e.t(rq.Front())
		q.EarliestDeadline = e.ep.at(rq.Front() + e.sloNS)
	}
	d := p.Decide(q, e.t(e.now))
	return d.Dispatch, e.off(d.Next)
}

func (e *engine) fail() {
	e.inSystem--
	e.timeouts++
	e.rec.Failed()
	e.sample.Missed++
	e.perDone++
}

// pick returns the instance the next VM batch goes to (-1: none eligible), as the policy's
// picker chooses from the accepting instances with a free slot, in table order.
func (e *engine) pick() int {
	if e.leastOut {
		return e.pickLeastOutstanding()
	}
	e.cands, e.candIdx = e.cands[:0], e.candIdx[:0]
	for _, i := range e.live {
		in := &e.insts[i]
		if !in.accepting {
			continue
		}
		ty := e.types[in.typ]
		free := ty.backend.Slots - in.busy
		if free <= 0 {
			continue
		}
		e.cands = append(e.cands, dispatch.Instance{ID: in.id, Free: free, Outstanding: in.busy, Weight: ty.weight})
		e.candIdx = append(e.candIdx, i)
	}
	k := e.picker.Pick(e.cands)
	if k < 0 || k >= len(e.cands) {
		return -1
	}
	return e.candIdx[k]
}

// pickLeastOutstanding is pick with the default picker, dispatch.LeastOutstanding, read off
// the instance table without building its snapshot (the snapshot of a large fleet was a tenth of
// a busy trace's CPU, issue #17): the fewest busy slots, ties to more free slots, then the
// earlier instance. An idle instance with the most slots of any ready type ends the scan: no
// later one can beat it.
func (e *engine) pickLeastOutstanding() int {
	top := 0
	for _, ty := range e.types {
		if ty.ready > 0 {
			top = max(top, ty.backend.Slots)
		}
	}
	best, bestBusy, bestFree := -1, 0, 0
	for _, i := range e.live {
		in := &e.insts[i]
		if !in.accepting {
			continue
		}
		free := e.types[in.typ].backend.Slots - in.busy
		if free <= 0 {
			continue
		}
		if best < 0 || in.busy < bestBusy || in.busy == bestBusy && free > bestFree {
			best, bestBusy, bestFree = i, in.busy, free
			if in.busy == 0 && free == top {
				return best
			}
		}
	}
	return best
}

func (e *engine) newBatch() int32 {
	if e.freeBatch >= 0 {
		b := e.freeBatch
		e.freeBatch = e.batches[b].next
		e.batches[b].arr = e.batches[b].arr[:0]
		return b
	}
	e.batches = append(e.batches, batchRec{})
	return int32(len(e.batches) - 1)
}

func (e *engine) releaseBatch(b int32) {
	e.batches[b].next = e.freeBatch
	e.freeBatch = b
}

func (e *engine) noise() float64 {
	if fs := e.cfg.LaunchNoiseFactors; len(fs) > 0 && e.launching() {
		return fs[e.rngSvc.IntN(len(fs))]
	}
	if fs := e.cfg.NoiseFactors; len(fs) > 0 {
		return fs[e.rngSvc.IntN(len(fs))]
	}
	if e.noiseSig == 0 {
		return 1
	}
	if len(e.cfg.LaunchNoiseFactors) > 0 { // rngSvc also feeds its draws: one at a time
		return e.lognormal()
	}
	if e.noiseAt == len(e.noiseCur) {
		e.fillNoise()
	}
	v := e.noiseCur[e.noiseAt]
	e.noiseAt++
	return v
}

// lognormal draws one log-normal factor of mean 1 (σ = noiseSig) from rngSvc.
func (e *engine) lognormal() float64 { return lognormal(e.rngSvc, e.noiseSig) }

// noiseBlock is how many log-normal factors fillNoise draws at once.
const noiseBlock = 64

// fillNoise readies the next log-normal factors: the shared sequence's next block (noise.go),
// or, past what the memo holds, the next noiseBlock drawn here. Without factor lists rngSvc
// feeds nothing but these draws, so the sequence is the one drawing each factor when its batch
// starts gave, value for value; drawn in a loop, the exps (a chain of some 25 dependent
// floating-point operations each, 9 % of the scoreboard's CPU when each waited for its batch)
// overlap (issue #17 item 6, TestNoiseBlockMatchesOneByOne, TestSharedNoiseMatchesOneByOne).
func (e *engine) fillNoise() {
	e.noiseAt = 0
	if e.noiseSeq != nil {
		b, pcg := e.noiseSeq.block(e.noiseBlk)
		if b != nil {
			e.noiseCur = b
			e.noiseBlk++
			return
		}
		e.noiseSeq, e.rngSvc = nil, rand.New(pcg) // the memo is full: on from the block's start
	}
	for i := range e.noiseBuf {
		e.noiseBuf[i] = e.lognormal()
	}
	e.noiseCur = e.noiseBuf[:]
}

// launching reports whether any VM instance is launching (Config.LaunchNoiseFactors).
func (e *engine) launching() bool {
	for i := range e.types {
		if ty := e.types[i]; ty.alive > ty.ready {
			return true
		}
	}
	return false
}

func (e *engine) dispatchVM(n int) {
	i := e.pick()
	if i < 0 {
		return
	}
	in := &e.insts[i]
	if in.spec.MaxBatch > 0 && n > in.spec.MaxBatch {
		n = in.spec.MaxBatch
	}
	ty := e.types[in.typ]
	b := e.newBatch()
	br := &e.batches[b]
	br.exp = br.exp[:0]
	for range n {
		br.arr = append(br.arr, e.vq.Pop())
		br.exp = append(br.exp, e.vqExp.Pop())
	}
	br.inst, br.start, br.stall = int32(i), e.now, e.st.cum
	br.est = float64(e.adm.Cost().Of(int64(n)))
	e.estSum += br.est
	e.startSum += float64(e.now)
	svc := float64(ty.backend.Curve.ServiceTime(n)) * e.noise()
	if bu := ty.it.Burst; bu != nil {
		svc = e.burst(in, bu, svc)
	}
	in.busy++
	e.busySlots++
	e.freeSlots--
	e.inflight++
	e.rec.Batch(n)
	e.h.Push(e.now+max(int64(svc), 1), evVMDone, b)
}

// burst applies AWS T2 CPU credits: full speed while credits last, Baseline speed without;
// a batch consumes vCPU-minutes of credit for the time it runs (divided among the slots).
func (e *engine) burst(in *vmInst, b *cost.Burst, svc float64) float64 {
	maxC := b.MaxCredits
	if maxC == 0 {
		maxC = 24 * b.CreditsPerHour
	}
	in.credits = min(maxC, in.credits+b.CreditsPerHour*time.Duration(e.now-in.creditAt).Hours())
	in.creditAt = e.now
	if in.credits <= 0 {
		svc /= b.Baseline
	}
	ty := e.types[in.typ]
	in.credits -= float64(ty.it.VCPU) / float64(ty.backend.Slots) * time.Duration(svc).Minutes()
	return svc
}

func (e *engine) vmDone(b int32) {
	br := &e.batches[b]
	i := int(br.inst)
	in := &e.insts[i]
	in.busy--
	e.busySlots--
	e.inflight--
	if in.accepting {
		e.freeSlots++
	}
	failed := in.ended != 0 && in.ended < e.now // reclaimed (spot) before the batch finished
	e.estSum -= br.est
	e.startSum -= float64(br.start)
	e.admit(br, failed)
	e.complete(br.arr, slo.TierVM, failed)
	if !e.vmInert { // an inert policy's Observe does nothing
		e.observe(e.vmBatch, e.vmOff, br, failed)
	}
	e.releaseBatch(b)
	if in.state == provider.StateDraining && in.busy == 0 {
		e.end(i)
	}
	e.pumpVM()
}

// admit feeds a completed VM batch to the admission estimator as the live gateway does: its
// round trip to the cost fit, each request's outcome to the miss controller (a deadline miss, or
// an overrun of its estimate beyond the margin).
func (e *engine) admit(br *batchRec, failed bool) {
	if !failed {
		e.adm.Observe(int64(len(br.arr)), time.Duration(e.now-br.start))
	}
	// In offsets (exactly the times' differences): converting each request's three times was
	// about 6 % of a busy trace's run (pprof, issue #17).
	for k, a := range br.arr {
		missed := failed || e.now-a > e.sloNS ||
			(br.exp[k] != 0 && e.adm.OverrunBeyondMargin(time.Duration(e.now-br.exp[k]), e.cfg.SLO.Threshold))
		e.adm.OutcomeAt(missed, e.now)
	}
}

func (e *engine) complete(arr []int64, tier slo.Tier, failed bool) {
	for _, a := range arr {
		e.inSystem--
		e.perDone++
		if failed {
			e.rec.Failed()
			e.sample.Missed++
			continue
		}
		lat := time.Duration(e.now - a)
		e.rec.Completed(lat, tier)
		if e.seriesAt > 0 { // the period's percentiles are the series' alone
			e.period.Record(lat)
		}
		e.sample.Completed++
		if int64(lat) > e.sloNS {
			e.sample.Missed++
		} else {
			e.perMet++
		}
		if lat > e.sample.LatencyMax {
			e.sample.LatencyMax = lat
		}
	}
}

func (e *engine) observe(p batching.Policy, op batching.OffsetPolicy, br *batchRec, failed bool) {
	if op != nil {
		op.ObserveOffsets(len(br.arr), br.start, e.now, br.arr, failed, e.now)
		return
	}
	e.tbuf = e.tbuf[:0]
	for _, a := range br.arr {
		e.tbuf = append(e.tbuf, e.t(a))
	}
	p.Observe(batching.Outcome{Size: len(br.arr), Dispatched: e.t(br.start), Completed: e.t(e.now), Arrivals: e.tbuf, Failed: failed}, e.t(e.now))
}

// ---- serverless tier ----

// expireFns drops idle function instances whose keep-alive ran out.
func (e *engine) expireFns() {
	for e.fnIdle.N > 0 && e.now-e.fnIdle.Front() > e.keepAlive {
		e.fnIdle.Pop()
	}
}

func (e *engine) slFree() int {
	return e.fnIdle.N + max(0, e.cat.Serverless.Concurrency-e.fnIdle.N-e.fnBusy)
}

func (e *engine) pumpSL() {
	if e.sl == nil {
		return
	}
	for {
		for e.sq.N > 0 && e.now-e.sq.Front() > e.timeout {
			e.sq.Pop()
			e.fail()
		}
		e.expireFns()
		free := e.slFree()
		n := e.sq.N
		if n == 0 && e.slInert {
			return
		}
		disp, nx := e.decide(e.slBatch, e.slFixed, e.slOff, e.slInert, &e.sq, free)
		if nx >= 0 && nx > e.now && (e.slWake < e.now || nx < e.slWake) {
			e.slWake = nx
			if e.slWakes.add(nx) {
				e.h.Push(nx, evWakeSL, 0)
			}
		}
		if disp <= 0 || n == 0 || free == 0 {
			return // with a dispatch wanted and no instance free, a completion pumps again
		}
		e.dispatchSL(min(disp, n))
	}
}

func (e *engine) dispatchSL(n int) {
	var startDelay int64
	if e.fnIdle.N > 0 {
		// Reuse the most recently idled instance (warm): drop it from the back of the ring.
		e.fnIdle.N--
	} else {
		startDelay = int64(e.cat.Serverless.ColdStart.Sample(e.rngCloud))
		e.cold++
	}
	e.fnBusy++
	b := e.newBatch()
	br := &e.batches[b]
	for range n {
		br.arr = append(br.arr, e.sq.Pop())
	}
	br.inst, br.start = -1, e.now
	svc := max(int64(float64(e.slCurve.ServiceTime(n))*e.noise()), 1)
	e.slBusyNS += svc
	e.slCost += e.cat.Serverless.InvocationCost(e.slMem, time.Duration(svc))
	e.inflight++
	e.rec.Batch(n)
	e.h.Push(e.now+startDelay+svc, evSLDone, b)
}

func (e *engine) slDone(b int32) {
	br := &e.batches[b]
	e.fnBusy--
	e.inflight--
	e.fnIdle.Push(e.now)
	e.complete(br.arr, slo.TierServerless, false)
	if !e.slInert {
		e.observe(e.slBatch, e.slOff, br, false)
	}
	e.releaseBatch(b)
	e.pumpSL()
}

// ---- sampling, scaling, series ----

func (e *engine) busy() bool {
	return !e.arrivalsDone || e.vq.N > 0 || e.sq.N > 0 || e.inflight > 0
}

func (e *engine) tick() {
	if len(e.twins) > 0 {
		if e.twinStops() {
			return
		}
	} else {
		if e.cfg.MissBudget > 0 && e.rec.Missed() > e.cfg.MissBudget && e.err == nil {
			e.err = ErrMissBudget
			return
		}
		if e.cfg.CostBudget > 0 && e.err == nil && e.billSoFar(nil) > e.cfg.CostBudget {
			e.err = ErrCostBudget
			return
		}
	}
	// Close the sample.
	elapsed := float64(e.now - e.off(e.sample.Start))
	if elapsed > 0 {
		e.sample.Concurrency = e.area / elapsed
		e.sample.VMInFlight = e.vmArea / elapsed
		e.sample.Upstream = e.upArea / elapsed
	}
	e.area, e.vmArea, e.upArea = 0, 0, 0
	e.pushHistory(e.sample)
	e.sample = autoscale.Sample{Start: e.t(e.now), Period: e.cfg.SamplePeriod}

	if e.seriesAt > 0 && e.now >= e.seriesAt {
		e.addSeriesPoint()
		e.seriesAt += int64(e.cfg.SeriesPeriod)
	}
	e.interruptScheduled()
	if e.pol.Scaler != nil {
		e.scale()
	}
	e.pumpVM()
	e.pumpSL()
	if e.busy() {
		e.h.Push(e.now+int64(e.cfg.SamplePeriod), evSample, 0)
	}
}

// pushHistory appends s to the scalers' window of the last HistoryLen samples in amortised
// O(1): the window slides along a backing array of twice its length and is copied back to the
// front once per HistoryLen samples (copying the whole window every sample was a quarter of a
// week-long run's CPU, issue #17).
func (e *engine) pushHistory(s autoscale.Sample) {
	if len(e.history) == e.cfg.HistoryLen {
		if cap(e.history) == len(e.history) {
			if cap(e.histBuf) < 2*e.cfg.HistoryLen {
				e.histBuf = make([]autoscale.Sample, 2*e.cfg.HistoryLen)
			}
			e.history = e.histBuf[:copy(e.histBuf, e.history[1:])]
		} else {
			e.history = e.history[1:]
		}
	}
	e.history = append(e.history, s)
}

// billSoFar is a lower bound of the run's final bill: what the ended instances and the
// function tier cost, and what each running instance on a fixed price would be billed if it
// ended now (billing is non-decreasing in the time used; price series are left out), under the
// run's own accounts, or twin t's.
func (e *engine) billSoFar(t *twinBook) float64 {
	c := e.slCost
	if t == nil {
		for _, ty := range e.types {
			c += ty.costUSD
		}
	} else {
		for _, a := range t.accts {
			c += a.costUSD
		}
	}
	for _, i := range e.live {
		in := &e.insts[i]
		if in.ended != 0 || in.state == provider.StateTerminated {
			continue
		}
		a := &e.types[in.typ].account
		if t != nil {
			a = t.accts[t.of[in.typ]]
		}
		c += a.running(in.launched, e.now)
	}
	return c
}

func (e *engine) scale() {
	e.fleet = e.fleet[:0]
	for _, i := range e.live {
		in := &e.insts[i]
		if in.ended != 0 {
			continue
		}
		ty := e.types[in.typ]
		m := autoscale.Member{ID: in.id, Type: ty.name, Tier: provider.TierVM, State: in.state, Spot: ty.spot,
			Launched: e.t(in.launched), Slots: ty.backend.Slots, Busy: in.busy}
		if in.ready > 0 || in.state == provider.StateReady {
			m.Ready = e.t(in.ready)
		}
		e.fleet = append(e.fleet, m)
	}
	d := e.pol.Scaler.Scale(autoscale.Snapshot{Fleet: e.fleet, History: e.history, QueueLen: e.vq.N}, e.t(e.now))
	for _, sp := range d.Launch {
		i, err := e.launch(sp)
		if err != nil {
			e.err = fmt.Errorf("policy %s: launch: %w", e.pol.Name, err)
			return
		}
		delay := int64(e.types[e.insts[i].typ].it.LaunchDelay.Sample(e.rngCloud))
		e.h.Push(e.now+delay, evReady, int32(i))
	}
	for _, id := range d.Terminate {
		e.terminate(id)
	}
	if nx := e.off(d.Next); nx > e.now && e.busy() {
		// Once per instant: a scaler answers the same Next at every sample until then (MArk's
		// next plan), and each answer's event was a duplicate to pop and drop — 9 % of the
		// events popped on fn5 and fn6 in the default and MArk settings, and a fuller heap for
		// all the others (issue #17). The one pending event pops where the first of the
		// duplicates did (the same time, the earliest push); the others never scaled.
		if nx != e.scaleAt {
			e.h.Push(nx, evScale, 0)
		}
		e.scaleAt = nx
	}
	if len(e.insts) > 64 && len(e.instIdx) < len(e.insts)/4 && e.inflight == 0 {
		e.compact()
	}
}

// compact drops terminated instances from the instance table (only with no batch in flight, as
// batches refer to instances by index; pending evReady/evSpot events are for live instances).
func (e *engine) compact() {
	for _, ev := range e.h.Events() {
		if ev.Kind == evReady || ev.Kind == evSpotNotice || ev.Kind == evSpotReclaim {
			return
		}
	}
	kept := e.insts[:0]
	for _, in := range e.insts {
		if in.ended == 0 {
			kept = append(kept, in)
		}
	}
	e.insts = kept
	e.live = e.live[:0]
	for i, in := range e.insts {
		e.instIdx[in.id] = i
		e.live = append(e.live, i)
	}
}

func (e *engine) finish() *Result {
	for i := range e.insts {
		e.end(i)
	}
	e.setAlive(0)
	dur := time.Duration(e.now)
	if e.seriesAt > 0 && (len(e.series.Points) == 0 || e.series.Points[len(e.series.Points)-1].At < dur) {
		e.addSeriesPoint()
	}
	s := e.rec.Summary(e.pol.Name, e.cfg.Trace, dur)
	var vmCost float64
	for _, ty := range e.types {
		vmCost += ty.costUSD
		s.InstanceHours[ty.name] += ty.used.Hours()
	}
	s.CostUSD = slo.CostUSD{Total: vmCost + e.slCost, VM: vmCost, Serverless: e.slCost}
	s.ColdStarts = e.cold
	s.Extra = map[string]float64{
		"vm_instance_seconds":     e.aliveArea / 1e9,
		"serverless_busy_seconds": float64(e.slBusyNS) / 1e9,
		"launches":                float64(e.launches),
		"terminations":            float64(e.terms),
		"spot_interruptions":      float64(e.interrupts),
		"timeouts":                float64(e.timeouts),
	}
	if e.now > 0 {
		s.Extra["mean_vm_instances"] = e.aliveArea / float64(e.now)
	}
	if s.Requests > 0 {
		s.Extra["cost_per_million_usd"] = s.CostUSD.Total / float64(s.Requests) * 1e6
	}
	res := &Result{Summary: s, Latency: e.rec.Histogram(), Series: e.series, Stop: e.stop}
	for _, t := range e.twins {
		res.Twins = append(res.Twins, t.result(s, e.slCost))
	}
	if r, ok := e.slBatch.(planReporter); ok {
		res.Plans = r.Plans()
	}
	return res
}
