package experiment

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/planner"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
)

// The oracle row of the scoreboard (issue #17 item 5): the offline floor of a model-port
// setting. Every minute's actual peak of 5 s arrival rates is covered with the cheapest mix —
// whole on-demand VM instances of MArk's planner's types at their μ* (the mix Alg. 1 would buy
// for that peak, as the mark-breakdown experiment prices it), the rest of the minute's requests on the serverless tier at its cheapest
// (memory, batch) per request — launched instantly, billed for that minute only, with no launch,
// cold-start or queueing overhead. It sees the future, so no policy can match it; every row's
// cost_vs_oracle is its cost over this floor.

// oracleWindow is the window of the peak rate (MArk's P_s) and oracleMinute the billing unit.
const (
	oracleWindow = 5 * time.Second
	oracleMinute = time.Minute
)

// oracleMaxBatch is the largest serverless batch the floor forms: the largest any policy of
// the scoreboard forms (sloserve's BATCH optimiser searches B ≤ 32).
const oracleMaxBatch = 32

// oracleVM is one VM type's price per minute and capacity (requests/s within the SLO).
type oracleVM struct {
	name     string
	perMin   float64
	capacity float64
}

// oracleSL is one serverless (memory, batch): its service time and price per request.
type oracleSL struct {
	mem    int
	svc    time.Duration
	batch  int
	perReq float64
}

// oracle prices a run's arrivals.
type oracle struct {
	spec slo.Spec
	vms  []oracleVM // by price per capacity, cheapest first
	sls  []oracleSL // by price per request, cheapest first
}

// newOracle lists the VM types and serverless configurations that can serve a request within
// the SLO. The VM types are MArk's planner's (types: their μ* and on-demand prices, as the
// mark-breakdown oracle prices them) when given, else the model's profiled types in cat at the
// best batch whose service plus its fill at full load fits the SLO (S(b)·(1 + 1/slots) ≤ SLO).
func newOracle(cat *cost.Catalog, model profile.Model, spec slo.Spec, types []planner.InstanceType) *oracle {
	o := &oracle{spec: spec}
	for _, t := range types {
		if !t.Spot && t.Feasible && t.Capacity > 0 && t.PricePerHour > 0 {
			o.vms = append(o.vms, oracleVM{name: t.Name, perMin: t.PricePerHour / 60, capacity: t.Capacity})
		}
	}
	for _, name := range model.Types() {
		if len(types) > 0 {
			break
		}
		it, ok := cat.Type(name)
		b := model.VM[name]
		if !ok || it.PricePerHour <= 0 {
			continue
		}
		best := 0.0
		for n := 1; n <= max(b.Curve.MaxMeasured(), 1); n++ {
			t := b.Curve.ServiceTime(n)
			if t <= 0 || float64(t)*(1+1/float64(max(b.Slots, 1))) > float64(spec.Threshold) {
				break
			}
			best = math.Max(best, float64(max(b.Slots, 1)*n)/t.Seconds())
		}
		if best > 0 {
			o.vms = append(o.vms, oracleVM{name: name, perMin: it.PricePerHour / 60, capacity: best})
		}
	}
	sort.Slice(o.vms, func(i, j int) bool {
		return o.vms[i].perMin/o.vms[i].capacity < o.vms[j].perMin/o.vms[j].capacity
	})
	if model.Serverless != nil {
		s := cat.Serverless
		for mem := max(s.MinMemoryMB, 64); mem <= s.MaxMemoryMB; mem += 64 {
			c, err := model.Serverless.At(mem)
			if err != nil {
				continue
			}
			for n := 1; n <= min(max(c.MaxMeasured(), 1), oracleMaxBatch); n++ {
				t := c.ServiceTime(n)
				if t <= 0 || t > spec.Threshold {
					break
				}
				o.sls = append(o.sls, oracleSL{mem: mem, svc: t, batch: n, perReq: s.InvocationCost(mem, t) / float64(n)})
			}
		}
		sort.Slice(o.sls, func(i, j int) bool { return o.sls[i].perReq < o.sls[j].perReq })
	}
	return o
}

// vmCost returns the cheapest per-minute price of whole instances whose capacities sum to at
// least rate: as many of the cheapest type per capacity as fit below the rate, the remainder
// on the cheapest single instance that covers it (+Inf without VM types).
func (o *oracle) vmCost(rate float64) float64 {
	if rate <= 0 {
		return 0
	}
	if len(o.vms) == 0 {
		return math.Inf(1)
	}
	base := o.vms[0]
	n := math.Floor(rate / base.capacity)
	rest := rate - n*base.capacity
	c := n * base.perMin
	if rest <= 1e-9 {
		return c
	}
	tail := math.Inf(1)
	for _, v := range o.vms {
		if v.capacity >= rest {
			tail = math.Min(tail, v.perMin)
		}
	}
	return c + math.Min(tail, base.perMin*math.Ceil(rest/base.capacity))
}

// slCost returns the price per request on the serverless tier at mean rate r (requests/s): the
// cheapest (memory, batch) whose batch fills within the SLO left after its service (+Inf
// without a serverless profile).
func (o *oracle) slCost(r float64) float64 {
	for _, s := range o.sls {
		if s.batch == 1 || float64(s.batch-1) <= r*(o.spec.Threshold-s.svc).Seconds() {
			return s.perReq
		}
	}
	return math.Inf(1)
}

// minute returns the floor's price of one minute with counts arrivals per 5 s window: the
// cheapest of covering capacity at each window's rate (0 included) with VMs and serving the
// windows' excess on the serverless tier, each window's batches filled at the higher of its own
// rate and the minute's mean.
func (o *oracle) minute(counts []int) float64 {
	total := 0
	levels := []float64{0}
	for _, n := range counts {
		total += n
		levels = append(levels, float64(n)/oracleWindow.Seconds())
	}
	if total == 0 {
		return 0
	}
	// A request's batch may fill at its window's rate or at the minute's mean, whichever is
	// cheaper: a floor of both (a busy 5 s window fills larger batches than the minute's mean).
	mean := o.slCost(float64(total) / oracleMinute.Seconds())
	sl := make([]float64, len(counts))
	for i, n := range counts {
		sl[i] = math.Min(mean, o.slCost(float64(n)/oracleWindow.Seconds()))
	}
	best := math.Inf(1)
	for _, lv := range levels {
		c := o.vmCost(lv)
		for i, n := range counts {
			if ex := math.Max(0, float64(n)-lv*oracleWindow.Seconds()); ex > 0 {
				c += ex * sl[i]
			}
		}
		best = math.Min(best, c)
	}
	return best
}

// OracleCost returns the offline floor's price of arr's arrivals (the same arrivals a run
// replays: the trace part's Arrivals with the run's seed) under the setting's catalog, model and
// SLO, with MArk's planner types when given (see the comment at the top of this file).
func OracleCost(cat *cost.Catalog, model profile.Model, spec slo.Spec, types []planner.InstanceType, arr sim.Arrivals) (float64, error) {
	o := newOracle(cat, model, spec, types)
	if len(o.vms) == 0 && len(o.sls) == 0 {
		return 0, fmt.Errorf("oracle: model %s has no VM type or serverless configuration within %v", model.Name, spec.Threshold)
	}
	c, err := o.cost(arr)
	if err != nil {
		return 0, fmt.Errorf("oracle: model %s %w", model.Name, err)
	}
	return c, nil
}

// cost sums the floor's price of arr's minutes.
func (o *oracle) cost(arr sim.Arrivals) (float64, error) {
	per := int(oracleMinute / oracleWindow)
	counts := make([]int, per)
	cur, total := int64(-1), 0.0
	for {
		at, ok := arr.Next()
		m := int64(at / oracleMinute)
		if !ok || m != cur {
			if cur >= 0 {
				c := o.minute(counts)
				if math.IsInf(c, 1) {
					return 0, fmt.Errorf("cannot serve minute %d's peak", cur)
				}
				total += c
			}
			clear(counts)
			cur = m
		}
		if !ok {
			return total, nil
		}
		counts[int((at%oracleMinute)/oracleWindow)]++
	}
}

// plannerTypes returns MArk's planner types in world w (its mark section applied), or none
// when mark cannot run there (a serverless-only model).
func (w World) plannerTypes() []planner.InstanceType {
	env := sim.Env{Catalog: w.Catalog, Model: w.Model, SLO: w.Config.SLO, Decode: w.decoder("mark", nil)}
	p, err := sim.New("mark", env)
	if err != nil {
		return nil
	}
	if t, ok := p.Scaler.(interface{ Types() []planner.InstanceType }); ok {
		return t.Types()
	}
	return nil
}
