package ensemble

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/sim"

	"github.com/sloserve/sloserve/internal/sim/des"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/forecast"
	"github.com/sloserve/sloserve/internal/policy/cocktail"
	"github.com/sloserve/sloserve/internal/slo"
)

// Event kinds of the ensemble loop (its own heap; the values need not differ from Run's).
const (
	ekJobDone uint8 = iota
	ekDeadline
	ekReady
	ekControl
	ekFail
	ekSpotNotice
	ekSpotReclaim
)

// eReq is one ensemble request in flight.
type eReq struct {
	arrival  int64
	cons     int
	label    int
	feedback bool
	pending  int  // sub-requests not yet resolved (voted, lost or cancelled)
	jobs     int  // sub-requests created
	answered bool // answered or failed
	answers  []int
	votes    []int // per model (workload order): the class voted, -1 when not (yet) arrived
	nvotes   int
}

// eJob is one model's sub-request.
type eJob struct {
	req   int32
	model int32
	inst  int32
	next  int32 // free list
}

type eType struct {
	name    string // with /spot on the spot market
	base    string
	it      cost.InstanceType
	billing cost.Billing
	spot    bool
	series  *cost.PriceSeries
	scale   float64
	used    time.Duration
	costUSD float64
}

type eInst struct {
	id        string
	pool      int
	typ       int
	slots     int
	busy      int
	launched  int64
	ready     bool
	accepting bool // ready and neither interrupted nor dead
	dead      bool // killed (failure or spot reclaim): in-flight work is lost
	notified  bool // spot interruption notice received: takes no new work
	ended     int64
	idleSince int64
}

type ePool struct {
	m       ensemble.Model
	row     int // table row
	q       des.Ring
	insts   []int // alive instance indices (launching, ready or interrupted)
	late    int   // sub-requests started too late to vote before their deadline since the last control
	served  int64
	maxInst int
	seconds float64
	costUSD float64
	static  float64 // static pools: slots to keep
	free    []int
	cand    []int
}

type eCons struct {
	c        ensemble.Constraint
	cand     []int // candidate model indices, most accurate first
	names    []string
	dyn      *ensemble.Dynamic
	selected []int
	selNames []string
	window   []bool
	wpos     int
	wright   int
	wn       int
	arrivals int64
	requests int64
	right    int64
	met      int64
	models   int64
	changes  int
	initial  []string
}

type eEngine struct {
	ctx context.Context
	cfg EnsembleConfig
	cat *cost.Catalog
	w   EnsembleWorkload
	pol EnsemblePolicy

	now      int64
	h        des.Heap
	rec      *slo.Recorder
	sloNS    int64
	noiseSig float64
	rngSvc   *rand.Rand
	rngCloud *rand.Rand
	rngMix   *rand.Rand
	rngFail  *rand.Rand
	oracle   *ensemble.Oracle
	cumW     []float64

	order   []int // model indices, most accurate first (vote order)
	pools   []*ePool
	cons    []*eCons
	types   []*eType
	typeIdx map[string]int
	insts   []eInst
	nextID  int

	reqs    []eReq
	freeReq []int32
	live    int
	jobs    []eJob
	freeJob int32

	weights *ensemble.ClassWeights
	pop     *ensemble.Popularity
	fc      forecast.Forecaster
	preds   []ensemble.Prediction
	nextDyn int64

	// Load monitoring.
	periodArr  int
	minutePeak float64
	minuteEnd  int64
	recentPeak float64
	predicted  float64

	arrivalsDone bool
	answered     int64
	right        int64
	met          int64
	jobsTotal    int64
	votesTotal   int64
	partial      int64
	cancelled    int64
	lost         int64
	failedInst   int64
	interrupts   int64
	launches     int64
	terms        int64
	aliveArea    float64
	alive        int
	lastAlive    int64
	err          error
}

// RunEnsemble simulates pol serving the ensemble workload w on the virtual cloud cat and returns
// the Summary and per-pool and per-constraint figures. It is deterministic for cfg.Seed (and
// the workload's arrivals). It stops early with ctx's error when ctx is cancelled.
func RunEnsemble(ctx context.Context, cfg EnsembleConfig, cat *cost.Catalog, w EnsembleWorkload, pol EnsemblePolicy) (*EnsembleResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	if cat == nil {
		c := cost.DefaultCatalog()
		cat = &c
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = sim.DefaultEpoch
	}
	ocfg := cfg.Oracle
	ocfg.Seed = cfg.Seed
	oracle, err := ensemble.NewOracle(w.Table, ocfg)
	if err != nil {
		return nil, err
	}
	e := &eEngine{
		ctx: ctx, cfg: cfg, cat: cat, w: w, pol: pol,
		rec:      slo.NewRecorder(cfg.SLO),
		sloNS:    int64(cfg.SLO.Threshold),
		rngSvc:   rand.New(rand.NewPCG(cfg.Seed, 0x5e541ce)),
		rngCloud: rand.New(rand.NewPCG(cfg.Seed, 0xc10d)),
		rngMix:   rand.New(rand.NewPCG(cfg.Seed, 0xc0c7a11)),
		rngFail:  rand.New(rand.NewPCG(cfg.Seed, 0xfa11)),
		oracle:   oracle,
		typeIdx:  map[string]int{},
		freeJob:  -1,
		weights:  ensemble.NewClassWeights(ensemble.Precision, 0),
		pop:      ensemble.NewPopularity(pol.Ensemble.PopularityWindow),
	}
	if cfg.NoiseCV > 0 {
		e.noiseSig = math.Sqrt(math.Log1p(cfg.NoiseCV * cfg.NoiseCV))
	}
	if err := e.setup(); err != nil {
		return nil, err
	}
	if err := e.loop(); err != nil {
		return nil, err
	}
	return e.finish(), nil
}

func (e *eEngine) t(off int64) time.Time { return e.cfg.Epoch.Add(time.Duration(off)) }

// setup builds pools, types, constraint classes and the warm fleet.
func (e *eEngine) setup() error {
	w, pol := e.w, e.pol
	for i, m := range w.Models {
		e.pools = append(e.pools, &ePool{m: m, row: w.Table.ModelIndex(m.Name)})
		e.weights.SetPrior(m.Name, m.Accuracy)
		e.order = append(e.order, i)
	}
	// Vote order: most accurate first (plain majority's ties go to the earliest vote).
	byName := map[string]int{}
	for i, m := range w.Models {
		byName[m.Name] = i
	}
	sorted := ensemble.Candidates(w.Models, ensemble.Constraint{Latency: math.MaxInt64 / 4, Accuracy: 1}, 0)
	for i, m := range sorted {
		e.order[i] = byName[m.Name]
	}
	for _, t := range e.cfg.Types {
		name := t.Name
		if pol.Spot {
			name += cost.SpotSuffix
		}
		if _, err := e.typeFor(name, t.Scale); err != nil {
			return err
		}
	}
	total := 0.0
	for _, c := range w.Constraints {
		total += c.Weight
	}
	start := e.t(0)
	share := make([]float64, len(e.pools)) // share of requests using each model at the start
	for _, wc := range w.Constraints {
		ec := &eCons{c: wc.Constraint, window: make([]bool, e.cfg.AccuracyWindow)}
		cand := ensemble.Candidates(w.Models, wc.Constraint, pol.Ensemble.LatencyMargin)
		if len(cand) == 0 {
			return fmt.Errorf("constraint %v: %w", wc.Constraint, ensemble.ErrNoCandidate)
		}
		for _, m := range cand {
			ec.cand = append(ec.cand, byName[m.Name])
			ec.names = append(ec.names, m.Name)
		}
		switch pol.Selection {
		case SelectDynamic:
			d, err := ensemble.NewDynamic(pol.Ensemble, wc.Constraint, cand, nil, start)
			if err != nil {
				return err
			}
			ec.dyn = d
			e.setSelection(ec, d.Models())
		case SelectFull:
			e.setSelection(ec, ec.names)
		case SelectAll:
			ec.cand = ec.cand[:0]
			for _, m := range sorted {
				ec.cand = append(ec.cand, byName[m.Name])
			}
			e.setSelection(ec, names(sorted))
		case SelectSingle:
			e.setSelection(ec, []string{singleModel(cand, wc.Constraint.Accuracy, pol.Ensemble.AccuracyMargin).Name})
		}
		ec.initial = ec.selNames
		for _, i := range ec.selected {
			share[i] += wc.Weight / total
		}
		e.cons = append(e.cons, ec)
		e.cumW = append(e.cumW, total)
	}
	acc := 0.0
	for i, c := range w.Constraints {
		acc += c.Weight / total
		e.cumW[i] = acc
	}
	// Warm fleet: static pools for the peak, the others for the initial rate, ready at t = 0.
	rate := w.InitialRPS
	if pol.Scaling == ScaleStaticPeak {
		rate = w.PeakRPS
	}
	for i, p := range e.pools {
		need := pol.PoolSlots(rate*share[i], p.m.Latency, e.cfg.SLO.Threshold)
		if pol.Scaling == ScaleStaticPeak {
			p.static = need
		}
		if err := e.procure(i, need, true); err != nil {
			return err
		}
	}
	fc, err := forecast.New(pol.Forecast, forecast.Options{Horizon: max(1, int(pol.Horizon/time.Minute)), Season: 24 * 60, Seed: e.cfg.Seed})
	if err != nil {
		return fmt.Errorf("ensemble policy %s: forecast: %w", pol.Name, err)
	}
	e.fc = fc
	e.minuteEnd = int64(time.Minute)
	e.nextDyn = int64(pol.Ensemble.Interval)
	e.h.Push(int64(e.cfg.ControlPeriod), ekControl, 0)
	if e.cfg.FailAt > 0 && e.cfg.FailFraction > 0 {
		e.h.Push(int64(e.cfg.FailAt), ekFail, 0)
	}
	return nil
}

func names(ms []ensemble.Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func (e *eEngine) setSelection(ec *eCons, names []string) {
	ec.selNames = names
	ec.selected = ec.selected[:0]
	for _, n := range names {
		for _, i := range ec.cand {
			if e.w.Models[i].Name == n {
				ec.selected = append(ec.selected, i)
			}
		}
	}
}

// typeFor registers an instance type (name may carry /spot).
func (e *eEngine) typeFor(name string, scale float64) (int, error) {
	if i, ok := e.typeIdx[name]; ok {
		return i, nil
	}
	base, spot := cost.ParseType(name)
	it, ok := e.cat.Type(base)
	if !ok {
		return 0, fmt.Errorf("instance type %q is not in the catalog", base)
	}
	ty := &eType{name: name, base: base, it: it, billing: e.cat.BillingFor(it), spot: spot, scale: scale}
	if spot {
		s, ok := e.cfg.SpotPrices[base]
		switch {
		case ok:
			ty.series = &s
		case it.SpotPricePerHour <= 0:
			return 0, fmt.Errorf("instance type %q is not offered on the spot market", base)
		}
	}
	e.types = append(e.types, ty)
	e.typeIdx[name] = len(e.types) - 1
	return len(e.types) - 1, nil
}

// price returns the hourly price of ty at the current time.
func (e *eEngine) price(ty *eType) float64 {
	switch {
	case ty.series != nil:
		return ty.series.PriceAt(time.Duration(e.now))
	case ty.spot:
		return ty.it.SpotPricePerHour
	}
	return ty.it.PricePerHour
}

func (e *eEngine) slotsOn(p *ePool, ty *eType) int {
	return int(math.Floor(p.m.PackingFactor*ty.scale + 1e-9))
}

// procure tops pool i up to need slots with Cocktail's cost-aware procurement (§4.2.1):
// A_n = need − C_r, cheapest type by Cost × ⌈A_n / P_f⌉ (ensemble.Procure). ready launches the
// instances ready at once (the warm fleet).
func (e *eEngine) procure(i int, need float64, ready bool) error {
	p := e.pools[i]
	var running []float64
	for _, k := range p.insts {
		if in := &e.insts[k]; !in.dead && !in.notified {
			running = append(running, float64(in.slots))
		}
	}
	var opts []ensemble.InstanceType
	for _, ty := range e.types {
		if s := e.slotsOn(p, ty); s > 0 {
			opts = append(opts, ensemble.InstanceType{Name: ty.name, CostPerHour: e.price(ty), PackingFactor: float64(s)})
		}
	}
	if len(opts) == 0 {
		return fmt.Errorf("pool %s: no instance type has a slot for packing factor %v", p.m.Name, p.m.PackingFactor)
	}
	d, err := ensemble.Procure(need, running, opts)
	if err != nil {
		return fmt.Errorf("pool %s: %w", p.m.Name, err)
	}
	for range d.Count {
		e.launch(i, e.typeIdx[d.Type], ready)
	}
	return nil
}

func (e *eEngine) setAlive(delta int) {
	e.aliveArea += float64(e.alive) * float64(e.now-e.lastAlive)
	e.lastAlive = e.now
	e.alive += delta
}

func (e *eEngine) launch(pool, ti int, ready bool) {
	ty, p := e.types[ti], e.pools[pool]
	e.nextID++
	in := eInst{id: "vm-" + strconv.Itoa(e.nextID), pool: pool, typ: ti, slots: e.slotsOn(p, ty), launched: e.now, idleSince: e.now}
	e.insts = append(e.insts, in)
	k := len(e.insts) - 1
	p.insts = append(p.insts, k)
	p.maxInst = max(p.maxInst, len(p.insts))
	e.launches++
	e.setAlive(+1)
	if ready {
		e.becomeReady(k)
	} else {
		e.h.Push(e.now+int64(ty.it.LaunchDelay.Sample(e.rngCloud)), ekReady, int32(k))
	}
	if ty.spot && e.cat.Spot.InterruptionsPerHour > 0 {
		wait := e.rngCloud.ExpFloat64() / e.cat.Spot.InterruptionsPerHour * float64(time.Hour)
		if wait < 1<<61 {
			e.h.Push(e.now+int64(wait), ekSpotNotice, int32(k))
		}
	}
}

func (e *eEngine) becomeReady(k int) {
	in := &e.insts[k]
	if in.dead || in.notified || in.ended != 0 || in.ready {
		return
	}
	in.ready, in.accepting, in.idleSince = true, true, e.now
	e.pump(in.pool)
}

// end terminates instance k now and bills it (per second, 60 s minimum; spot by the price
// series), with cost.Billing and cost.PriceSeries as Run bills its fleet.
func (e *eEngine) end(k int) {
	in := &e.insts[k]
	if in.ended != 0 {
		return
	}
	in.accepting = false
	in.ended = max(e.now, 1)
	p := e.pools[in.pool]
	for j, x := range p.insts {
		if x == k {
			p.insts = append(p.insts[:j], p.insts[j+1:]...)
			break
		}
	}
	e.setAlive(-1)
	ty := e.types[in.typ]
	used := time.Duration(e.now - in.launched)
	billed := ty.billing.Billable(used)
	var c float64
	switch {
	case ty.series != nil:
		from := time.Duration(in.launched)
		c = ty.series.PriceAt(from) * billed.Hours()
		if used > 0 {
			c = ty.series.Cost(from, from+used) * float64(billed) / float64(used)
		}
	case ty.spot:
		c = cost.VMCost(ty.billing, ty.it.SpotPricePerHour, used)
	default:
		c = cost.VMCost(ty.billing, ty.it.PricePerHour, used)
	}
	ty.used += used
	ty.costUSD += c
	p.seconds += used.Seconds()
	p.costUSD += c
}

// kill makes instance k fail now: its in-flight sub-requests are lost when they would have
// finished, and it is billed up to now.
func (e *eEngine) kill(k int) {
	in := &e.insts[k]
	if in.ended != 0 {
		return
	}
	in.dead = true
	e.end(k)
}

func (e *eEngine) loop() error {
	next, ok := e.w.Arrivals.Next()
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
			e.now = at
			e.arrive()
			next, ok = e.w.Arrivals.Next()
			e.arrivalsDone = !ok
			continue
		}
		if e.h.Len() == 0 || (!ok && e.live == 0) {
			e.arrivalsDone = true
			return nil
		}
		ev := e.h.Pop()
		e.now = ev.At
		switch ev.Kind {
		case ekJobDone:
			e.jobDone(ev.ID)
		case ekDeadline:
			e.deadline(int(ev.ID))
		case ekReady:
			e.becomeReady(int(ev.ID))
		case ekControl:
			e.control()
		case ekFail:
			e.fail()
		case ekSpotNotice:
			e.spotNotice(int(ev.ID))
		case ekSpotReclaim:
			e.kill(int(ev.ID))
		}
	}
}

// ---- requests ----

func (e *eEngine) newReq() int {
	if n := len(e.freeReq); n > 0 {
		r := int(e.freeReq[n-1])
		e.freeReq = e.freeReq[:n-1]
		return r
	}
	nm := len(e.w.Table.Models)
	e.reqs = append(e.reqs, eReq{answers: make([]int, nm), votes: make([]int, len(e.pools))})
	return len(e.reqs) - 1
}

func (e *eEngine) newJob() int32 {
	if e.freeJob >= 0 {
		j := e.freeJob
		e.freeJob = e.jobs[j].next
		return j
	}
	e.jobs = append(e.jobs, eJob{})
	return int32(len(e.jobs) - 1)
}

func (e *eEngine) arrive() {
	e.periodArr++
	ri := e.newReq()
	r := &e.reqs[ri]
	r.label, r.feedback = e.oracle.Draw(r.answers)
	u := e.rngMix.Float64()
	r.cons = len(e.cumW) - 1
	for i, c := range e.cumW {
		if u < c {
			r.cons = i
			break
		}
	}
	ec := e.cons[r.cons]
	r.arrival, r.answered, r.nvotes, r.pending = e.now, false, 0, len(ec.selected)
	r.jobs = len(ec.selected)
	for i := range r.votes {
		r.votes[i] = -1
	}
	e.live++
	e.pop.Record(e.t(e.now), ec.selNames)
	for _, m := range ec.selected {
		j := e.newJob()
		e.jobs[j] = eJob{req: int32(ri), model: int32(m), inst: -1, next: -1}
		e.jobsTotal++
		e.pools[m].q.Push(int64(j))
	}
	ec.models += int64(len(ec.selected))
	ec.arrivals++
	e.h.Push(e.now+e.sloNS, ekDeadline, int32(ri))
	for _, m := range ec.selected {
		e.pump(m)
	}
}

// resolve marks one sub-request of request ri as done (vote arrived, lost or cancelled) and
// answers or fails the request when nothing more can come.
func (e *eEngine) resolve(ri int) {
	r := &e.reqs[ri]
	r.pending--
	if !r.answered && r.pending == 0 {
		if r.nvotes > 0 {
			e.answer(ri)
		} else {
			r.answered = true
			e.rec.Failed()
			e.live--
		}
	}
	if r.answered && r.pending == 0 {
		e.freeReq = append(e.freeReq, int32(ri))
	}
}

func (e *eEngine) deadline(ri int) {
	r := &e.reqs[ri]
	if r.answered || r.nvotes == 0 || e.now-r.arrival < e.sloNS {
		// Answered already; or no vote yet, and the first vote answers it (late); or the event
		// belongs to an earlier request whose slot this one reuses.
		return
	}
	e.partial++
	e.answer(ri) // pending > 0 here: resolve frees the request when the last sub-request ends
}

// answer votes over the arrived answers (§4.1.1), scores the request, and feeds the label back
// to the class weights and the dynamic policy.
func (e *eEngine) answer(ri int) {
	r := &e.reqs[ri]
	r.answered = true
	e.live--
	e.preds = e.preds[:0]
	for _, m := range e.order {
		if c := r.votes[m]; c >= 0 {
			e.preds = append(e.preds, ensemble.Prediction{Model: e.w.Models[m].Name, Class: c})
		}
	}
	var v ensemble.Verdict
	if e.pol.Weighted {
		v = e.weights.Weighted(e.preds)
	} else {
		v = ensemble.Majority(e.preds)
	}
	ok := v.Class == r.label
	e.rec.Completed(time.Duration(e.now-r.arrival), slo.TierVM)
	e.answered++
	e.votesTotal += int64(len(e.preds))
	ec := e.cons[r.cons]
	ec.requests++
	if ok {
		e.right++
		ec.right++
	}
	// Moving-window accuracy of the constraint (§6.1), including this request.
	if ec.wn == len(ec.window) {
		if ec.window[ec.wpos] {
			ec.wright--
		}
	} else {
		ec.wn++
	}
	ec.window[ec.wpos] = ok
	if ok {
		ec.wright++
	}
	ec.wpos = (ec.wpos + 1) % len(ec.window)
	if float64(ec.wright)/float64(ec.wn) >= ec.c.Accuracy-1e-12 {
		e.met++
		ec.met++
	}
	label := -1
	if r.feedback {
		label = r.label
		if e.pol.Weighted {
			e.weights.Learn(e.preds, r.label)
		}
	}
	if ec.dyn != nil {
		ec.dyn.Record(e.preds, v, label)
	}
}

// ---- pools ----

func (e *eEngine) noise() float64 {
	if e.noiseSig == 0 {
		return 1
	}
	s := e.noiseSig
	return math.Exp(s*e.rngSvc.NormFloat64() - s*s/2)
}

// pump starts queued sub-requests of pool i on the instance with the least free slots that has
// one (§4.2.1 load balancer, ensemble.LeastFreeSlot), dropping sub-requests whose request was
// answered already and failing those that waited longer than the request timeout.
func (e *eEngine) pump(i int) {
	p := e.pools[i]
	for p.q.N > 0 {
		j := int32(p.q.Front())
		jb := &e.jobs[j]
		r := &e.reqs[jb.req]
		if r.answered {
			p.q.Pop()
			e.cancelled++
			e.releaseJob(j)
			e.resolve(int(jb.req))
			continue
		}
		if e.now-r.arrival > int64(e.cfg.RequestTimeout) {
			p.q.Pop()
			e.lost++
			e.releaseJob(j)
			e.resolve(int(jb.req))
			continue
		}
		p.free, p.cand = p.free[:0], p.cand[:0]
		for _, k := range p.insts {
			in := &e.insts[k]
			if in.accepting {
				p.free = append(p.free, in.slots-in.busy)
				p.cand = append(p.cand, k)
			}
		}
		pick := ensemble.LeastFreeSlot(p.free)
		if pick < 0 {
			break
		}
		p.q.Pop()
		if e.now-r.arrival > e.sloNS-int64(p.m.Latency) {
			p.late++ // an SLO violation in the making: the reactive path scales on these
		}
		k := p.cand[pick]
		in := &e.insts[k]
		in.busy++
		jb.inst = int32(k)
		svc := max(int64(float64(p.m.Latency)*e.noise()), 1)
		e.h.Push(e.now+svc, ekJobDone, j)
	}
}

func (e *eEngine) releaseJob(j int32) {
	e.jobs[j].next = e.freeJob
	e.freeJob = j
}

func (e *eEngine) jobDone(j int32) {
	jb := e.jobs[j]
	e.releaseJob(j)
	in := &e.insts[jb.inst]
	in.busy--
	if in.busy == 0 {
		in.idleSince = e.now
	}
	ri := int(jb.req)
	r := &e.reqs[ri]
	if in.dead {
		e.lost++
	} else {
		e.pools[jb.model].served++
		if !r.answered {
			r.votes[jb.model] = r.answers[e.pools[jb.model].row]
			r.nvotes++
			if e.now-r.arrival > e.sloNS {
				// Past the deadline with no vote before: the first vote answers it (late).
				e.answer(ri)
			}
		}
	}
	e.resolve(ri)
	if !in.dead {
		e.pump(in.pool)
	}
}

// ---- control: monitoring, selection, scaling, failures ----

func (e *eEngine) control() {
	period := e.cfg.ControlPeriod
	rate := float64(e.periodArr) / period.Seconds()
	e.periodArr = 0
	e.minutePeak = max(e.minutePeak, rate)
	if e.now >= e.minuteEnd {
		e.fc.Observe(e.minutePeak)
		f := e.fc.Forecast(max(1, int(e.pol.Horizon/time.Minute)))
		e.predicted = 0
		for _, v := range f {
			e.predicted = max(e.predicted, v)
		}
		e.recentPeak = e.minutePeak
		e.minutePeak = 0
		e.minuteEnd += int64(time.Minute)
	}
	// Alg. 1: the dynamic policy steps every interval, per constraint.
	if e.now >= e.nextDyn {
		for _, ec := range e.cons {
			if ec.dyn == nil {
				continue
			}
			d := ec.dyn.Step(e.t(e.now))
			if d.Changed() {
				ec.changes++
				e.setSelection(ec, d.Models)
			}
		}
		e.nextDyn += int64(e.pol.Ensemble.Interval)
	}
	e.scale(rate)
	for i := range e.pools {
		e.pump(i)
		e.pools[i].late = 0
	}
	if !e.arrivalsDone || e.live > 0 {
		e.h.Push(e.now+int64(period), ekControl, 0)
	}
}

// scale sizes every pool by Cocktail's Alg. 2 (policy/cocktail's Sizing.Size, the pure
// decision any runtime can drive): the load L_p = max(predicted peak, recent peak, current rate)
// times the pool's importance weight (popularity over 5 min) is the pool's offered load; a pool
// whose sub-requests started too late to vote in time during the last period grows by the
// reactive step; missing slots are procured at least cost; instances idle for the idle timeout
// are recycled when the rest still covers the need. Static pools only replace lost capacity.
func (e *eEngine) scale(rate float64) {
	var weights map[string]float64
	lp := max(e.predicted, e.recentPeak, rate)
	if e.pol.Scaling == ScaleWeighted {
		weights = e.pop.Weights(e.t(e.now))
	}
	sz := e.pol.Sizing()
	now := e.t(e.now)
	for i, p := range e.pools {
		cp := cocktail.Pool{Model: p.m, Weight: weights[p.m.Name], Static: p.static, Late: p.late > 0}
		for _, k := range p.insts {
			in := &e.insts[k]
			if in.dead {
				continue
			}
			cp.Instances = append(cp.Instances, cocktail.Instance{ID: strconv.Itoa(k), Slots: in.slots, Busy: in.busy,
				Accepting: in.accepting, Notified: in.notified, IdleSince: e.t(in.idleSince)})
		}
		for _, ty := range e.types {
			if s := e.slotsOn(p, ty); s > 0 {
				cp.Types = append(cp.Types, ensemble.InstanceType{Name: ty.name, CostPerHour: e.price(ty), PackingFactor: float64(s)})
			}
		}
		d, err := sz.Size(cp, lp, e.cfg.SLO.Threshold, now)
		if err != nil {
			e.err = err
			return
		}
		for range d.Procurement.Count {
			e.launch(i, e.typeIdx[d.Procurement.Type], false)
		}
		for _, id := range d.Terminate {
			k, _ := strconv.Atoi(id)
			e.terms++
			e.end(k)
		}
	}
}

// fail kills FailFraction of every pool's live instances (stochastic rounding, so that the
// expected fraction is exact even for small pools), as chaosmonkey does in Cocktail §6.3.2.
func (e *eEngine) fail() {
	for _, p := range e.pools {
		var live []int
		for _, k := range p.insts {
			if e.insts[k].ready && !e.insts[k].dead {
				live = append(live, k)
			}
		}
		x := e.cfg.FailFraction * float64(len(live))
		n := int(x)
		if e.rngFail.Float64() < x-float64(n) {
			n++
		}
		e.rngFail.Shuffle(len(live), func(a, b int) { live[a], live[b] = live[b], live[a] })
		for _, k := range live[:n] {
			e.failedInst++
			e.kill(k)
		}
	}
}

func (e *eEngine) spotNotice(k int) {
	in := &e.insts[k]
	if in.ended != 0 {
		return
	}
	e.interrupts++
	in.accepting, in.notified = false, true
	e.h.Push(e.now+int64(e.cat.Spot.Notice), ekSpotReclaim, int32(k))
}

func (e *eEngine) finish() *EnsembleResult {
	for k := range e.insts {
		e.end(k)
	}
	e.setAlive(0)
	dur := time.Duration(e.now)
	s := e.rec.Summary(e.pol.Name, e.w.Trace, dur)
	var vmCost float64
	for _, ty := range e.types {
		vmCost += ty.costUSD
		if ty.used > 0 {
			s.InstanceHours[ty.name] += ty.used.Hours()
		}
	}
	s.CostUSD = slo.CostUSD{Total: vmCost, VM: vmCost}
	if e.answered > 0 {
		a := float64(e.right) / float64(e.answered)
		s.Accuracy = &a
	}
	s.MeanBatchSize = 1
	x := map[string]float64{
		"launches":              float64(e.launches),
		"terminations":          float64(e.terms),
		"failed_instances":      float64(e.failedInst),
		"spot_interruptions":    float64(e.interrupts),
		"partial_answers":       float64(e.partial),
		"cancelled_subrequests": float64(e.cancelled),
		"lost_subrequests":      float64(e.lost),
		"vm_instance_seconds":   e.aliveArea / 1e9,
	}
	if e.now > 0 {
		x["mean_vm_instances"] = e.aliveArea / float64(e.now)
	}
	if s.Requests > 0 {
		x["accuracy_target_met_fraction"] = float64(e.met) / float64(s.Requests)
		x["mean_models"] = float64(e.jobsTotal) / float64(s.Requests)
		x["accuracy_all"] = float64(e.right) / float64(s.Requests)
		x["cost_per_million_usd"] = vmCost / float64(s.Requests) * 1e6
	}
	if e.answered > 0 {
		x["mean_votes"] = float64(e.votesTotal) / float64(e.answered)
	}
	res := &EnsembleResult{Latency: e.rec.Histogram()}
	for i, ec := range e.cons {
		cs := ConstraintStats{LatencyMS: float64(ec.c.Latency) / 1e6, Target: ec.c.Accuracy, Candidates: ec.names,
			Requests: ec.arrivals, SelectionSteps: ec.changes}
		if ec.arrivals > 0 {
			cs.TargetMet = float64(ec.met) / float64(ec.arrivals)
			cs.MeanModels = float64(ec.models) / float64(ec.arrivals)
		}
		if ec.requests > 0 {
			cs.Accuracy = float64(ec.right) / float64(ec.requests)
			x["accuracy_c"+strconv.Itoa(i+1)] = cs.Accuracy
			x["target_met_c"+strconv.Itoa(i+1)] = cs.TargetMet
		}
		res.Selections = append(res.Selections, cs)
	}
	s.Extra = x
	for _, p := range e.pools {
		res.Pools = append(res.Pools, PoolStats{Model: p.m.Name, InstanceSeconds: p.seconds, CostUSD: p.costUSD, Served: p.served, MaxInstances: p.maxInst})
	}
	res.Summary = s
	return res
}
