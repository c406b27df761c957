package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Stalls is a whole-host stall process (Config.Stalls): on a machine whose cores are shared by
// more runnable processes than it has (`sloserve validate`'s 2-core development host), the
// scheduler now and then leaves the gateway, the load generator and the workers all waiting
// for tens of ms at once. Stalls come at Poisson instants of rate Rate; each lasts a length
// drawn uniformly from Lengths (measured, e.g. by `sloserve validate`'s timer probe). During a
// stall every VM batch in flight is delayed by the stall's length and nothing is dispatched:
// the requests queued and those that arrive meanwhile wait for its end (arrivals are not held
// back: live, 11–14 misses met in one controller step at 100–180 rps are more than the few
// requests in flight at a stall's start). The misses a stall makes cluster in one instant,
// which independent per-batch noise factors never do (issue #16). The serverless tier, on
// other machines, is not stalled.
type Stalls struct {
	// Rate is the mean number of stalls per second of virtual time; 0 turns the process off.
	Rate float64
	// Lengths are the stall lengths to draw from; each must be > 0. Required when Rate > 0.
	Lengths []time.Duration
}

// on reports whether the stall process runs.
func (s Stalls) on() bool { return s.Rate > 0 }

// validate reports the first field out of range.
func (s Stalls) validate() error {
	switch {
	case !(s.Rate >= 0) || math.IsInf(s.Rate, 0):
		return fmt.Errorf("sim.stalls.rate: must be finite and ≥ 0, got %v", s.Rate)
	case s.Rate > 0 && len(s.Lengths) == 0:
		return fmt.Errorf("sim.stalls.lengths: required when the rate is > 0")
	}
	for i, l := range s.Lengths {
		if l <= 0 {
			return fmt.Errorf("sim.stalls.lengths[%d]: must be > 0, got %v", i, l)
		}
	}
	return nil
}

// stallState is the engine's stall process: its own random stream (so that the other draws
// are the same with the process off), the end of the current stall, and the total stalled
// time so far, against which a batch in flight measures the stalls it sat through.
type stallState struct {
	rng *rand.Rand
	end int64 // the current (or last) stall's end offset; 0 before any
	cum int64 // Σ stall lengths so far, ns
}

// stallSeed is the stall process's stream, apart from the service and cloud streams.
const stallSeed = 0x57a115

// startStalls draws the first stall when Config.Stalls is on.
func (e *engine) startStalls() {
	if !e.cfg.Stalls.on() {
		return
	}
	e.st.rng = rand.New(rand.NewPCG(e.cfg.Seed, stallSeed))
	e.nextStall()
}

// nextStall schedules the next stall an exponential gap after the current one ends (stalls do
// not overlap: the probe that measures them cannot see one inside another either).
func (e *engine) nextStall() {
	gap := e.st.rng.ExpFloat64() / e.cfg.Stalls.Rate * float64(time.Second)
	if gap < 1<<61 {
		e.h.Push(max(e.now, e.st.end)+int64(gap), evStall, 0)
	}
}

// stall starts a stall now: its length is added to the total every batch in flight measures
// against (stallDelayed), dispatch waits for its end, and the next one is drawn while the run
// is busy.
func (e *engine) stall() {
	ls := e.cfg.Stalls.Lengths
	l := int64(ls[e.st.rng.IntN(len(ls))])
	e.st.end, e.st.cum = e.now+l, e.st.cum+l
	e.h.Push(e.st.end, evWakeVM, 0)
	if e.busy() {
		e.nextStall()
	}
}

// stalled reports whether the host is in a stall now (nothing is dispatched).
func (e *engine) stalled() bool { return e.now < e.st.end }

// stallDelayed moves batch b's completion later by the stalls it sat through since it was
// dispatched (or last moved) and reports whether it did: a stall freezes the batch's work.
func (e *engine) stallDelayed(b int32) bool {
	br := &e.batches[b]
	extra := e.st.cum - br.stall
	if extra <= 0 {
		return false
	}
	br.stall = e.st.cum
	e.h.Push(e.now+extra, evVMDone, b)
	return true
}
