package infless

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
)

// DefaultOffset is the +10 % added to predicted execution times (INFless §3.3: "we choose to
// increase the prediction offset by 10% to reduce the risk of SLO violations").
const DefaultOffset = 0.10

// Predictor returns the predicted execution time of a batch of b on resources r (from a measured
// profile or from combined operator profiling); ok is false when the configuration is infeasible.
type Predictor func(b int, r cluster.Resources) (t time.Duration, ok bool)

// Config is the scheduler's input besides the cluster and the load.
type Config struct {
	// SLO is the function's latency SLO t_slo.
	SLO time.Duration
	// Batches is the batch-size set B; the scheduler tries the largest first.
	Batches []int
	// Resources are the per-instance resource configurations ⟨c, g⟩ to explore (all_configurations).
	Resources []cluster.Resources
	// Beta converts CPU cores into GPU SM-percent units (Eq. 2); 0 means cluster.DefaultBeta.
	Beta float64
	// Offset inflates every prediction by this fraction; 0 means no offset (use DefaultOffset for §3.3).
	Offset float64
	// MaxInstances bounds one call; 0 means 1,000,000.
	MaxInstances int
	// FirstFit disables resource-aware scheduling (the RS ablation of INFless Fig. 11): within a
	// batch size only the configuration with the maximum throughput (largest r_up; ties to the
	// smaller β-weighted size) is used, placed on the lowest-numbered server it fits on, instead of
	// the Eq. 10 argmax over every configuration and server.
	FirstFit bool
	// Metric selects the resource-efficiency formula; the zero value is Eq. 10 as printed.
	Metric Metric
	// Target is the fraction of requests that must meet SLO (the SLO's attainment target, in
	// [0, 1]): SlackLimited configurations (b = 1, t_exec > t_slo/2) get RateBoundsTarget's
	// queueing cap on r_up. 0 means Eq. 1 as printed (RateBounds).
	Target float64
	// Pool is how many SlackLimited instances the function already runs: a new one's r_up is
	// its share of PooledRate over Pool + 1 instances. ≥ 0.
	Pool int
	// Memo, when set, remembers PooledRate's answers for Options across calls (the function's
	// SLO and Target fixed); nil computes them each time. The answers are the same either way.
	Memo *PoolMemo
}

// ShareTolerance is how far below the best share-priced efficiency a configuration may be and
// still be placed for its fit under MetricShare: near-ties between configurations (two GPU shares
// with the same r_up, a 4-thread and a 2-thread variant a few percent apart) are settled by which
// fills the server better, not by profile noise.
const ShareTolerance = 0.05

// Metric is a form of INFless's resource-efficiency metric e_ij.
type Metric int

const (
	// MetricPaper is Eq. 10 as printed: (r_up/(βc+g), normalised by the best option) / (1 −
	// (βc+g)/(βC_j+G_j)) with C_j, G_j server j's free resources.
	MetricPaper Metric = iota
	// MetricOriginal is the released scheduler's "CRE" (TankLabTJU/INFless
	// gpu/controller/scheduler.go, infless-constants.json "scheduler.objective"):
	// (r_up / maxThroughputEfficiency) / (fragment / slotCapacity), where fragment is the slot's
	// β-weighted free resources after the placement (plus a 0.1 % slack of its capacity) and
	// slotCapacity its β-weighted capacity. Unlike the printed Eq. 10 the numerator is the raw
	// r_up (maxThroughputEfficiency is a per-function constant), so it does not prefer
	// configurations that are cheap per FLOPS; it prefers high r_up and leaving little behind.
	MetricOriginal
	// MetricShare is sloserve's form, the default of its INFless policy. It keeps Eq. 10's two
	// parts — the configuration's throughput per resource, and how much of the server's free
	// resources it fills — but prices resources by the server's own capacity instead of β:
	//
	//	cost_ij = max(c_i/C, (g_i − spare_j)⁺/G)    spare_j = (G_j − C_j·G/C)⁺
	//	eff_ij  = r_up / cost_ij
	//	fit_ij  = (c_i/C + g_i/G) / (C_j/C + G_j/G)
	//
	// with C, G the server's capacity and C_j, G_j its free threads and GPU %. The cost is the
	// instance's dominant share of the server, and the GPU the server would strand anyway (beyond its
	// free threads' proportional share, spare_j) is free. Among the (configuration, server) pairs of
	// one batch size whose eff_ij is within ShareTolerance of the best, the one with the largest
	// fit_ij (Eq. 10's fragment term, 1 − fit_ij, at its smallest) is placed; ties go to the larger
	// eff_ij, then the larger r_up, then the lower server.
	//
	// Why (§3.4 leaves β and its interplay with placement open): β = 64/142 prices a thread at
	// 0.45 GPU %, so a 16-thread + 1-GPU server is 93 % GPU by weight and CPU-only configurations
	// look 10–30× more efficient; they exhaust the threads (every instance needs ≥ 2) and strand
	// the GPU (fragment ratio 64–92 %). Any fixed β mis-prices one dimension on some server: what
	// a GPU % is worth depends on whether the server has threads left to use it. The dominant share
	// charges the scarcer dimension, spare GPU costs nothing, and ranking by efficiency first with
	// the fit term as the tie-breaker stops Eq. 10's +Inf perfect fit from placing an inefficient
	// configuration (8 threads + 50 % for a model that needs 2 threads) just because it fills the
	// server exactly.
	MetricShare
)

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.SLO <= 0:
		return fmt.Errorf("infless: slo must be > 0, got %v", c.SLO)
	case len(c.Batches) == 0:
		return fmt.Errorf("infless: batches must not be empty")
	case len(c.Resources) == 0:
		return fmt.Errorf("infless: resources must not be empty")
	case c.Metric != MetricPaper && c.Metric != MetricOriginal && c.Metric != MetricShare:
		return fmt.Errorf("infless: metric: unknown %d", c.Metric)
	case !(c.Target >= 0 && c.Target <= 1):
		return fmt.Errorf("infless: target must be in [0, 1], got %v", c.Target)
	case c.Beta < 0 || c.Offset < 0 || c.MaxInstances < 0 || c.Pool < 0:
		return fmt.Errorf("infless: beta %v, offset %v, max_instances %d and pool %d must be ≥ 0", c.Beta, c.Offset, c.MaxInstances, c.Pool)
	}
	for _, b := range c.Batches {
		if b < 1 {
			return fmt.Errorf("infless: batches: %d must be ≥ 1", b)
		}
	}
	for _, r := range c.Resources {
		if r.CPU < 0 || r.GPU < 0 || r.IsZero() {
			return fmt.Errorf("infless: resources: %+v must be non-negative and non-zero", r)
		}
	}
	return nil
}

// Option is one feasible instance configuration ⟨b, c, g⟩ with its predicted execution time and bounds.
type Option struct {
	Batch     int
	Resources cluster.Resources
	Exec      time.Duration
	Bounds    Bounds
	weight    float64
	perRes    float64
}

// Placement is one new instance: its configuration and the server it goes on.
type Placement struct {
	Option
	Server int
	// Efficiency is e_ij of Eq. 10 at the time of placement (+Inf for a perfect fit).
	Efficiency float64
}

// Result is the scheduler's decision.
type Result struct {
	// Placements are the new instances, in the order Alg. 1 chose them.
	Placements []Placement
	// Unplaced is the residual rate (1/s) no feasible configuration could take (cluster full, or
	// no configuration meets the SLO).
	Unplaced float64
	// Reason explains how the loop ended.
	Reason string
}

// Options returns the feasible configurations for cfg, largest batch first, each with its
// predicted time (offset applied) and Eq. 1 bounds (RateBoundsTarget at cfg.Target).
func Options(cfg Config, predict Predictor) []Option {
	beta := cfg.Beta
	if beta == 0 {
		beta = cluster.DefaultBeta
	}
	bs := append([]int(nil), cfg.Batches...)
	sort.Sort(sort.Reverse(sort.IntSlice(bs)))
	var out []Option
	for i, b := range bs {
		if i > 0 && bs[i-1] == b {
			continue
		}
		for _, r := range cfg.Resources {
			t, ok := predict(b, r)
			if !ok || t <= 0 {
				continue
			}
			t = time.Duration(float64(t) * (1 + cfg.Offset))
			bounds, ok := cfg.Memo.RateBoundsTarget(b, t, cfg.SLO, cfg.Target, cfg.Pool+1)
			if !ok {
				continue
			}
			w := r.Weighted(beta)
			out = append(out, Option{Batch: b, Resources: r, Exec: t, Bounds: bounds, weight: w, perRes: bounds.Up / w})
		}
	}
	return out
}

// Schedule is INFless Alg. 1: while residual load remains, try batch sizes from the largest; among
// the configurations AvailableConfig admits (b = 1: t_exec ≤ t_slo; b > 1: t_exec ≤ t_slo/2 and
// R > r_low) and every server they fit on, place the one with the highest resource efficiency
//
//	e_ij = (r_up/(βc_i+g_i)) / (1 − (βc_i+g_i)/(βC_j+G_j))          (Eq. 10)
//
// where the numerator is normalised to [0, 1] by the best RPS-per-resource of all options and
// C_j, G_j are server j's free resources (a perfect fit scores +Inf). Ties go to the larger r_up,
// then to the lower server index, so the result is deterministic. cfg.Metric selects another
// form of e_ij (MetricOriginal, MetricShare); cfg.FirstFit the RS ablation. Schedule allocates the
// chosen resources on c; pass c.Clone() for a dry run.
func Schedule(c *cluster.Cluster, residual float64, cfg Config, predict Predictor) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	beta := cfg.Beta
	if beta == 0 {
		beta = cluster.DefaultBeta
	}
	maxN := cfg.MaxInstances
	if maxN == 0 {
		maxN = 1_000_000
	}
	opts := Options(cfg, predict)
	var best float64
	for _, o := range opts {
		best = math.Max(best, o.perRes)
	}
	pool := cfg.Pool
	boundAt := pool
	pr := poolRates{slo: cfg.SLO, target: cfg.Target}
	var sv shareVecs // sharePlacement's free vectors, kept across placements
	if cfg.Metric == MetricShare && !cfg.FirstFit {
		sv.load(c)
	}
	// Group options by batch size, largest first (opts is already in that order).
	type group struct{ start, end int }
	var groups []group
	for i := range opts {
		if i == 0 || opts[i].Batch != opts[i-1].Batch {
			groups = append(groups, group{i, i})
		}
		groups[len(groups)-1].end = i + 1
	}

	var res Result
	for residual > 0 {
		if len(res.Placements) >= maxN {
			res.Unplaced, res.Reason = residual, "max instances reached"
			return res, nil
		}
		placed := false
		for _, g := range groups {
			place := bestPlacement
			switch {
			case cfg.FirstFit:
				place = firstFitPlacement
			case cfg.Metric == MetricShare:
				place = nil // sharePlacement, with a reused buffer
			}
			var p Placement
			var ok bool
			if place == nil {
				p, ok = sharePlacement(&sv, opts[g.start:g.end], residual)
			} else {
				p, ok = place(c, opts[g.start:g.end], residual, best, beta, cfg.Metric)
			}
			if !ok {
				continue // no feasible configuration or no room with this batch size: try the next
			}
			old := c.Free(p.Server)
			if err := c.Place(p.Server, p.Resources); err != nil {
				return res, fmt.Errorf("infless schedule: %w", err)
			}
			if sv.pos != nil {
				sv.refresh(c, old)
				sv.refresh(c, c.Free(p.Server))
			}
			res.Placements = append(res.Placements, p)
			if cfg.Target > 0 && SlackLimited(p.Batch, p.Exec, cfg.SLO) {
				// A pooled cap: the new instance adds its marginal pooled rate to R_max, and each
				// instance's share grows with the pool. The options' bounds (which rank them) are
				// recomputed once the pool has grown by a tenth: PooledRate is O(pool).
				residual -= pr.up(p.Exec, pool+1) - pr.up(p.Exec, pool)
				if pool++; pool >= boundAt+max(1, boundAt/10) {
					boundAt = pool
					best = rebound(opts, cfg, pool, &pr)
				}
			} else {
				residual -= p.Bounds.Up
			}
			placed = true
			break
		}
		if !placed {
			res.Unplaced = residual
			if len(opts) == 0 {
				res.Reason = "no configuration meets the SLO"
			} else {
				res.Reason = "no server has room for a feasible configuration"
			}
			return res, nil
		}
	}
	res.Reason = "residual load covered"
	return res, nil
}

// rebound recomputes the SlackLimited options' bounds for one more instance in a pool of pool
// (RateBoundsTarget at pool+1, from pr) and returns the best r_up per resource over opts.
func rebound(opts []Option, cfg Config, pool int, pr *poolRates) float64 {
	var best float64
	for i := range opts {
		o := &opts[i]
		if SlackLimited(o.Batch, o.Exec, cfg.SLO) {
			if up := pr.up(o.Exec, pool+1) / float64(pool+1); up > 0 {
				o.Bounds.Up, o.perRes = up, up/o.weight
			}
		}
		best = math.Max(best, o.perRes)
	}
	return best
}

// bestPlacement evaluates Eq. 10 over the options of one batch size admitted by AvailableConfig and
// every distinct free-resource vector of the cluster.
func bestPlacement(c *cluster.Cluster, opts []Option, residual, best, beta float64, m Metric) (Placement, bool) {
	var out Placement
	found := false
	c.FreeVectors(func(fv cluster.FreeVector) bool {
		freeW := fv.Free.Weighted(beta)
		capW := c.Capacity(fv.Server).Weighted(beta)
		for _, o := range opts {
			if o.Batch > 1 && !(residual > o.Bounds.Low) {
				continue // AvailableConfig: the batch would not fill before its timeout
			}
			if !fv.Free.Fits(o.Resources) {
				continue
			}
			var e float64
			switch m {
			case MetricOriginal:
				e = o.Bounds.Up / ((freeW - o.weight + 0.001*capW) / capW)
			default:
				e = math.Inf(1)
				if frag := 1 - o.weight/freeW; frag > 1e-12 {
					e = (o.perRes / best) / frag
				}
			}
			if !found || better(e, o, fv.Server, out) {
				out = Placement{Option: o, Server: fv.Server, Efficiency: e}
				found = true
			}
		}
		return true
	})
	return out, found
}

func better(e float64, o Option, server int, cur Placement) bool {
	switch {
	case e != cur.Efficiency:
		return e > cur.Efficiency
	case o.Bounds.Up != cur.Bounds.Up:
		return o.Bounds.Up > cur.Bounds.Up
	case server != cur.Server:
		return server < cur.Server
	case o.Resources != cur.Resources:
		return o.Resources.GPU < cur.Resources.GPU || (o.Resources.GPU == cur.Resources.GPU && o.Resources.CPU < cur.Resources.CPU)
	}
	return false
}

// firstFitPlacement is the RS ablation: the admitted option with the largest r_up (ties to the
// smaller β-weighted size, then fewer GPU) on the lowest-numbered server with room for it.
func firstFitPlacement(c *cluster.Cluster, opts []Option, residual, best, beta float64, _ Metric) (Placement, bool) {
	var o Option
	found := false
	for _, x := range opts {
		if x.Batch > 1 && !(residual > x.Bounds.Low) {
			continue
		}
		if !found || x.Bounds.Up > o.Bounds.Up || (x.Bounds.Up == o.Bounds.Up && (x.weight < o.weight ||
			(x.weight == o.weight && x.Resources.GPU < o.Resources.GPU))) {
			o, found = x, true
		}
	}
	if !found {
		return Placement{}, false
	}
	server, ok := c.FirstFit(o.Resources)
	if !ok {
		return Placement{}, false
	}
	return Placement{Option: o, Server: server, Efficiency: math.NaN()}, true
}

// SpareGPU is the GPU share (in %) of a server with free resources free and capacity capacity
// that its free threads could not use even if every later instance took GPU in the server's own
// proportion (capacity.GPU/capacity.CPU per thread): free.GPU − free.CPU·G/C, or 0. A server with
// no threads left spares all its free GPU; one without GPU capacity spares none.
func SpareGPU(free, capacity cluster.Resources) float64 {
	if capacity.GPU <= 0 {
		return 0
	}
	if capacity.CPU <= 0 {
		return 0
	}
	return math.Max(0, float64(free.GPU)-float64(free.CPU)*float64(capacity.GPU)/float64(capacity.CPU))
}

// ShareCost is MetricShare's price of placing r on a server with free resources free and capacity
// capacity: r's dominant share of the capacity, max(c/C, (g − SpareGPU)⁺/G), never 0 (a
// configuration that only takes spare GPU still costs a sliver, so efficiencies stay finite).
func ShareCost(r, free, capacity cluster.Resources) float64 {
	return shareCost(r, capacity, SpareGPU(free, capacity))
}

// shareCost is ShareCost with the server's SpareGPU computed once.
func shareCost(r, capacity cluster.Resources, spare float64) float64 {
	cost := 1e-9
	if capacity.CPU > 0 {
		if x := float64(r.CPU) / float64(capacity.CPU); x > cost {
			cost = x
		}
	}
	if capacity.GPU > 0 {
		if x := (float64(r.GPU) - spare) / float64(capacity.GPU); x > cost {
			cost = x
		}
	}
	return cost
}

// Fill is the fraction of a server's free resources r would take, each dimension counted as its
// share of the server's capacity: (c/C + g/G) / (C_j/C + G_j/G) — Eq. 10's (βc+g)/(βC_j+G_j) with
// β = G/C. 1 is a perfect fit; 1 − Fill is Eq. 10's fragment term.
func Fill(r, free, capacity cluster.Resources) float64 {
	var num, den float64
	if capacity.CPU > 0 {
		num += float64(r.CPU) / float64(capacity.CPU)
		den += float64(free.CPU) / float64(capacity.CPU)
	}
	if capacity.GPU > 0 {
		num += float64(r.GPU) / float64(capacity.GPU)
		den += float64(free.GPU) / float64(capacity.GPU)
	}
	if den <= 0 {
		return 0
	}
	return num / den
}

// sharePlacement is MetricShare over the options of one batch size admitted by AvailableConfig and
// every distinct free-resource vector: the best efficiency first, then, within ShareTolerance of
// it, the best fill.
func sharePlacement(sv *shareVecs, opts []Option, residual float64) (Placement, bool) {
	admitted := false
	for k := range opts {
		if opts[k].Batch == 1 || residual > opts[k].Bounds.Low {
			admitted = true
			break
		}
	}
	if !admitted {
		return Placement{}, false
	}
	vecs := sv.vecs
	// Pass 1 prices every admitted (vector, option) pair once (NaN: not admitted) and finds the
	// best efficiency; pass 2 picks by fill among those within ShareTolerance of it.
	n := len(vecs) * len(opts)
	if cap(sv.effs) < n {
		sv.effs = make([]float64, n)
	}
	es := sv.effs[:n]
	var top float64
	for i := range vecs {
		v := &vecs[i]
		for k := range opts {
			o := &opts[k]
			if !(o.Batch == 1 || residual > o.Bounds.Low) || !v.fv.Free.Fits(o.Resources) {
				es[i*len(opts)+k] = math.NaN()
				continue
			}
			e := o.Bounds.Up / shareCost(o.Resources, v.capacity, v.spare)
			es[i*len(opts)+k] = e
			if e > top {
				top = e
			}
		}
	}
	var out Placement
	var outFill float64
	found := false
	floor := (1 - ShareTolerance) * top
	for i := range vecs {
		v := &vecs[i]
		for k := range opts {
			e := es[i*len(opts)+k]
			if !(e >= floor) { // NaN (not admitted) or below the tolerance
				continue
			}
			o := &opts[k]
			f := Fill(o.Resources, v.fv.Free, v.capacity)
			if !found || f > outFill+1e-12 || (f >= outFill-1e-12 && better(e, *o, v.fv.Server, out)) {
				out, outFill, found = Placement{Option: *o, Server: v.fv.Server, Efficiency: e}, f, true
			}
		}
	}
	return out, found
}

// serverVec is one distinct free vector with its server's capacity and SpareGPU.
type serverVec struct {
	fv       cluster.FreeVector
	capacity cluster.Resources
	spare    float64
}

// shareVecs is the cluster's FreeVectors as serverVecs, read once per Schedule call and kept
// current across its placements (a placement changes only the vector its server leaves and the
// one it joins), with sharePlacement's price buffer.
type shareVecs struct {
	vecs []serverVec
	pos  map[cluster.Resources]int // index in vecs by free vector
	effs []float64
}

func (sv *shareVecs) load(c *cluster.Cluster) {
	sv.pos = map[cluster.Resources]int{}
	c.FreeVectors(func(fv cluster.FreeVector) bool {
		sv.pos[fv.Free] = len(sv.vecs)
		sv.vecs = append(sv.vecs, newServerVec(c, fv))
		return true
	})
}

func newServerVec(c *cluster.Cluster, fv cluster.FreeVector) serverVec {
	capacity := c.Capacity(fv.Server)
	return serverVec{fv: fv, capacity: capacity, spare: SpareGPU(fv.Free, capacity)}
}

// refresh brings free's entry in line with c: updated, added, or removed (swapped with the last).
func (sv *shareVecs) refresh(c *cluster.Cluster, free cluster.Resources) {
	fv, ok := c.FreeVectorOf(free)
	i, had := sv.pos[free]
	switch {
	case ok && had:
		sv.vecs[i] = newServerVec(c, fv)
	case ok:
		sv.pos[free] = len(sv.vecs)
		sv.vecs = append(sv.vecs, newServerVec(c, fv))
	case had:
		last := len(sv.vecs) - 1
		sv.vecs[i] = sv.vecs[last]
		sv.pos[sv.vecs[i].fv.Free] = i
		sv.vecs = sv.vecs[:last]
		delete(sv.pos, free)
	}
}
