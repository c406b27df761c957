// Package cocktail is Cocktail's pool sizing (Alg. 2, §4.2) as a pure decision: the ensemble
// simulator drives it, and any live runtime that serves an ensemble can (it reads no clock and
// owns no instances). Selection (Alg. 1) and weighted voting are internal/ensemble's.
package cocktail

import (
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
)

// ScalingMode is how an ensemble policy sizes its model pools.
type ScalingMode uint8

// The scaling modes.
const (
	// ScaleWeighted is Cocktail's Alg. 2 with §4.2: predicted load × importance weight per pool,
	// reactive top-up from the pool's observed demand, cost-aware procurement, idle timeout.
	ScaleWeighted ScalingMode = iota
	// ScaleStaticPeak keeps each pool at its Static slots (sized once for the trace's peak); lost
	// capacity is replaced.
	ScaleStaticPeak
)

// DefaultReactiveStep is how much the reactive path grows a pool that saw SLO violations in the
// last control period (§4.2.2: "additional instances ... proportional to the SLO violations"):
// by a quarter of its slots.
const DefaultReactiveStep = 0.25

// Sizing configures Alg. 2.
type Sizing struct {
	// Scaling is the mode.
	Scaling ScalingMode
	// Slots is the slots a pool needs for rps requests per second of a model with latency lat
	// whose answers are due within deadline of arrival (square-root staffing by default: see
	// StaffedSlots).
	Slots func(rps float64, lat, deadline time.Duration) float64
	// ReactiveStep is the reactive top-up's fraction (DefaultReactiveStep).
	ReactiveStep float64
	// IdleTimeout recycles an instance idle this long when the rest still covers the need.
	IdleTimeout time.Duration
}

// StaffedSlots is the square-root staffing rule: an offered load of rps requests per second of
// latency lat is R = rps × lat concurrent requests, plus β√R of headroom.
func StaffedSlots(beta float64) func(rps float64, lat, deadline time.Duration) float64 {
	return func(rps float64, lat, _ time.Duration) float64 {
		r := rps * lat.Seconds()
		if r <= 0 {
			return 0
		}
		return r + beta*math.Sqrt(r)
	}
}

// Instance is one of a pool's live instances (launching, ready or interrupted; not dead).
type Instance struct {
	ID string
	// Slots is its concurrent requests; Busy those in use.
	Slots, Busy int
	// Accepting: ready and not interrupted. Notified: a spot interruption notice was received
	// (its slots no longer count).
	Accepting, Notified bool
	// IdleSince is when it last became idle.
	IdleSince time.Time
}

// Pool is one model's pool as Alg. 2 sees it at a control step.
type Pool struct {
	// Model is the pool's model (its latency sizes the slots).
	Model ensemble.Model
	// Weight is its importance weight (the model's popularity share; Weighted scaling).
	Weight float64
	// Static is the slots a ScaleStaticPeak pool keeps.
	Static float64
	// Late reports that sub-requests of the pool started too late to vote in time during the
	// last period (SLO violations).
	Late bool
	// Instances are its live instances, oldest first.
	Instances []Instance
	// Types are the instance types it can run on, with the slots one instance has for this model
	// (its packing factor there) and the current price.
	Types []ensemble.InstanceType
}

// Decision is Alg. 2's answer for one pool.
type Decision struct {
	// Need is the slots the pool should have.
	Need float64
	// Procurement is what to launch (Type × Count; empty when nothing).
	Procurement ensemble.Procurement
	// Terminate lists the ids of idle instances to recycle.
	Terminate []string
}

// Size is Alg. 2 for one pool at now, with the load L_p (requests/s: max of the predicted peak,
// the recent peak and the current rate) and the request deadline: the pool's offered load
// L_p × weight needs Slots slots; a pool that saw late sub-requests asks for ReactiveStep more
// than it has; the missing slots are procured at least cost (ensemble.Procure); instances idle
// for IdleTimeout are recycled while the rest still covers the need. A ScaleStaticPeak pool only
// replaces lost capacity.
func (s Sizing) Size(p Pool, load float64, deadline time.Duration, now time.Time) (Decision, error) {
	have := 0
	var running []float64
	for _, in := range p.Instances {
		if !in.Notified {
			have += in.Slots
			running = append(running, float64(in.Slots))
		}
	}
	var d Decision
	if s.Scaling == ScaleStaticPeak {
		d.Need = p.Static
	} else {
		d.Need = s.Slots(load*p.Weight, p.Model.Latency, deadline)
		if p.Late {
			d.Need = max(d.Need, math.Ceil(float64(have)*(1+s.ReactiveStep)))
		}
	}
	if len(p.Types) == 0 {
		return Decision{}, fmt.Errorf("pool %s: no instance type has a slot for packing factor %v", p.Model.Name, p.Model.PackingFactor)
	}
	proc, err := ensemble.Procure(d.Need, running, p.Types)
	if err != nil {
		return Decision{}, fmt.Errorf("pool %s: %w", p.Model.Name, err)
	}
	d.Procurement = proc
	if s.Scaling == ScaleStaticPeak {
		return d, nil
	}
	// What the pool has once the launches are counted (they count from launch, as Procure's
	// running set will next time).
	for _, t := range p.Types {
		if t.Name == proc.Type {
			have += proc.Count * int(t.PackingFactor)
		}
	}
	for _, in := range p.Instances {
		if in.Accepting && in.Busy == 0 && now.Sub(in.IdleSince) >= s.IdleTimeout && float64(have-in.Slots) >= d.Need {
			have -= in.Slots
			d.Terminate = append(d.Terminate, in.ID)
		}
	}
	return d, nil
}
