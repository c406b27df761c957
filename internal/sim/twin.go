package sim

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/slo"
)

// Twins: one run billed as several (issue #17 item 6). Two policies that differ only in the
// names of the types they launch — the same machines at other prices, as sagemaker's hosting
// and EC2 pricings ("ml.c5.large" and "c5.large") — run the same simulation: the launch names
// change the bill and nothing else. A twin bills the run a second time under its own names and
// cost budget; the tuner of sagemaker-ec2-tuned then rides on sagemaker-tuned's runs.

// Twin is a second bill of a run (Config.Twins).
type Twin struct {
	// Type returns the type the twin launches where the run launches t (cost.HostedOn:
	// "ml.c5.large" → "c5.large"). The twin's type must be in the catalog, run on the same
	// profile, and differ from t only in its name, prices and billing rule; spot types are
	// refused (their interruptions and price series are the type's own).
	Type func(t string) string
	// CostBudget is the twin's Config.CostBudget: its bill so far at a load sample past it stops
	// the twin (TwinResult.Stop), and the run once the run and every twin stopped.
	CostBudget float64
}

// TwinResult is a twin's outcome: the Summary its own run would report (type names and costs
// its own; the Policy the run's), or the early stop its own run would have met.
type TwinResult struct {
	Summary slo.Summary
	// Stop is ErrMissBudget or ErrCostBudget when the twin's run would have stopped early; the
	// Summary is then empty.
	Stop error
}

// ErrNotTwin is Run's error when a twin's type is not the run's type's machine under another
// name and price (Twin.Type): the caller runs the two apart.
var ErrNotTwin = errors.New("sim: not a twin")

// errAllStopped ends a run with twins once the run and every twin met their early stop.
var errAllStopped = errors.New("sim: the run and its twins all stopped")

// account is one type's bill: its name, prices and billing rule, and the time its ended
// instances ran and what they cost.
type account struct {
	name    string // with /spot for the spot market
	it      cost.InstanceType
	billing cost.Billing
	spot    bool
	series  *cost.PriceSeries
	used    time.Duration
	costUSD float64
}

// charge bills an instance launched at offset launched that ran for used.
func (a *account) charge(launched int64, used time.Duration) {
	a.used += used
	billed := a.billing.Billable(used)
	switch {
	case a.series != nil:
		from := time.Duration(launched)
		c := a.series.Cost(from, from+used)
		if used > 0 {
			c *= float64(billed) / float64(used)
		} else {
			c = a.series.PriceAt(from) * billed.Hours()
		}
		a.costUSD += c
	case a.spot:
		a.costUSD += cost.VMCost(a.billing, a.it.SpotPricePerHour, used)
	default:
		a.costUSD += cost.VMCost(a.billing, a.it.PricePerHour, used)
	}
}

// running is what an instance launched at offset launched and still running at now has cost
// so far (engine.billSoFar's lower bound: 0 for a spot instance on a price series).
func (a *account) running(launched, now int64) float64 {
	if a.series != nil {
		return 0
	}
	price := a.it.PricePerHour
	if a.spot {
		price = a.it.SpotPricePerHour
	}
	return cost.VMCost(a.billing, price, time.Duration(now-launched))
}

// twinBook is a twin's bill: one account per twin type, in the order of their first launch (as
// its own run makes them), and the account of each of the run's types.
type twinBook struct {
	tw    Twin
	accts []*account
	idx   map[string]int
	of    []int // engine.types index → accts index
	stop  error
}

// twinTypes adds the twins' accounts of the run's new type ty, checking that each twin's type
// is the same machine.
func (e *engine) twinTypes(ty *vmType) error {
	for _, t := range e.twins {
		name := t.tw.Type(ty.name)
		if i, ok := t.idx[name]; ok {
			t.of = append(t.of, i)
			continue
		}
		base, spot := cost.ParseType(name)
		if spot || ty.spot {
			return fmt.Errorf("%w: twin of %q: spot types have no twins", ErrNotTwin, ty.name)
		}
		it, ok := e.cat.Type(base)
		if !ok {
			return fmt.Errorf("%w: twin of %q: instance type %q is not in the catalog", ErrNotTwin, ty.name, base)
		}
		if !sameMachine(ty.it, it) || profileOf(e, base) != profileOf(e, ty.name) {
			return fmt.Errorf("%w: twin of %q: %q is not the same machine (only the name, prices and billing may differ)", ErrNotTwin, ty.name, name)
		}
		t.idx[name] = len(t.accts)
		t.of = append(t.of, len(t.accts))
		t.accts = append(t.accts, &account{name: name, it: it, billing: e.cat.BillingFor(it)})
	}
	return nil
}

// sameMachine reports whether a and b differ only in their name, prices and billing rule.
func sameMachine(a, b cost.InstanceType) bool {
	for _, t := range []*cost.InstanceType{&a, &b} {
		t.Name, t.PricePerHour, t.SpotPricePerHour, t.BillingMinimum, t.BillingGranularity = "", 0, 0, 0, 0
	}
	if (a.Burst == nil) != (b.Burst == nil) || a.Burst != nil && *a.Burst != *b.Burst {
		return false
	}
	a.Burst, b.Burst = nil, nil
	return a == b
}

// profileOf names the model profile a type runs on (typeFor's lookup).
func profileOf(e *engine, name string) string {
	base, _ := cost.ParseType(name)
	if _, ok := e.model.VM[base]; ok {
		return base
	}
	return cost.HostedOn(base)
}

// twinStops is tick's early stop with twins: the miss budget stops every party not yet stopped
// (they all missed the same requests), each cost budget its own party; the run ends once all
// stopped. It reports whether the run ends.
func (e *engine) twinStops() bool {
	if e.err != nil {
		return true
	}
	if e.cfg.MissBudget > 0 && e.rec.Missed() > e.cfg.MissBudget {
		if e.stop == nil {
			e.stop = ErrMissBudget
		}
		for _, t := range e.twins {
			if t.stop == nil {
				t.stop = ErrMissBudget
			}
		}
		e.err = errAllStopped
		return true
	}
	if e.cfg.CostBudget > 0 && e.stop == nil && e.billSoFar(nil) > e.cfg.CostBudget {
		e.stop = ErrCostBudget
	}
	all := e.stop != nil
	for _, t := range e.twins {
		if t.tw.CostBudget > 0 && t.stop == nil && e.billSoFar(t) > t.tw.CostBudget {
			t.stop = ErrCostBudget
		}
		all = all && t.stop != nil
	}
	if all {
		e.err = errAllStopped
	}
	return all
}

// stopped is the Result of a run whose parties all stopped early.
func (e *engine) stopped() *Result {
	res := &Result{Stop: e.stop}
	for _, t := range e.twins {
		res.Twins = append(res.Twins, TwinResult{Stop: t.stop})
	}
	return res
}

// result is the twin's outcome of a finished run whose own Summary is s (finish's order of
// sums, under the twin's accounts).
func (t *twinBook) result(s slo.Summary, slCost float64) TwinResult {
	if t.stop != nil {
		return TwinResult{Stop: t.stop}
	}
	s.InstanceHours = map[string]float64{}
	var vmCost float64
	for _, a := range t.accts {
		vmCost += a.costUSD
		s.InstanceHours[a.name] += a.used.Hours()
	}
	s.CostUSD = slo.CostUSD{Total: vmCost + slCost, VM: vmCost, Serverless: slCost}
	s.Extra = maps.Clone(s.Extra)
	if s.Requests > 0 {
		s.Extra["cost_per_million_usd"] = s.CostUSD.Total / float64(s.Requests) * 1e6
	}
	return TwinResult{Summary: s}
}
