package sloserve

import (
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/policy/cocktail"
)

// sloserve on the ensemble simulator (RunEnsemble): Cocktail's setting — every request carries a
// <latency, accuracy> constraint and is answered by the vote of an ensemble, each model with its
// own pool of VMs. sloserve re-implements none of Cocktail: its selection (Alg. 1's dynamic
// ensembles per constraint, O1/O2 candidates), class-weighted voting (§4.1.1), importance-weighted
// predictive pools (Alg. 2), cost-aware spot procurement (§4.2.1) and least-free-slot packing are
// cocktail.Cocktail's. sloserve changes two settings:
//
//   - Provisioning (sloserve's own rule, where Cocktail is vague): Cocktail sizes a pool by
//     "load / P_f" and says nothing of headroom; the simulator's Cocktail adds β√R slots
//     (square-root staffing, β = 2). But a sub-request may queue for the whole slack between its
//     model's latency and the request's deadline (400 ms against 40–150 ms of service), and the
//     square-root rule ignores it. sloserve gives each pool the fewest slots c whose M/M/c
//     (Erlang C) probability of a sub-request waiting past its slack, deadline − latency, is at
//     most WaitMiss: P(W > s) = C(c, a)·e^{−(c − a)s/L} with a = λL. Service times here are
//     near-deterministic (CV 0.05), so the exponential model errs on the safe side.
//   - Accuracy margin (Cocktail's Acc_margin, 0.2 % in the paper): the target is judged on a
//     moving window of 200 requests, whose accuracy wanders by ±√(a(1 − a)/200) ≈ 3 points;
//     pruning only when the interval's accuracy is 0.2 % above the target leaves the window
//     below it about a third of the time. sloserve prunes and up-sizes against target + 1 %.
//
// Each pool's sizing decision carries a reason naming the piece (sloserveSlots).

// Defaults of the sloserve ensemble policy.
const (
	// DefaultEnsembleWaitMiss is the share of a pool's sub-requests allowed to wait past their
	// slack: 1 − the simulator's 98 % SLO target.
	DefaultEnsembleWaitMiss = 0.02
	// DefaultSloserveAccuracyMargin is sloserve's Acc_margin (see above).
	DefaultSloserveAccuracyMargin = 0.01
)

// EnsemblePolicy is sloserve on the ensemble simulator: cocktail.Cocktail with deadline-aware
// pool sizing (waitMiss, see sloserveSlots) and a 1 % accuracy margin.
func EnsemblePolicy() cocktail.Policy {
	p := cocktail.Cocktail()
	p.Name = "sloserve"
	p.Ensemble.AccuracyMargin = DefaultSloserveAccuracyMargin
	p.Slots = func(rps float64, lat, deadline time.Duration) float64 {
		n, _ := sloserveSlots(rps, lat, deadline, DefaultEnsembleWaitMiss)
		return n
	}
	return p
}

func init() {
	policy.Register(policy.Spec{Name: "sloserve", Port: policy.PortEnsemble,
		Doc: "sloserve on Cocktail's setting: Cocktail's selection, voting and procurement with deadline-aware (Erlang C) pool sizes and a 1 % accuracy margin",
		New: func(policy.Env, any) (any, error) { return EnsemblePolicy(), nil }})
}

// Reasons of sloserveSlots.
const (
	slotsReasonIdle     = "sloserve: no load, no slots (Cocktail's idle timeout recycles the pool)"
	slotsReasonNoSlack  = "sloserve: latency ≥ deadline, no slack to queue in: cocktail's square-root staffing"
	slotsReasonDeadline = "sloserve: deadline-aware pool size (Erlang C wait past the slack ≤ miss share)"
)

// sloserveSlots returns the fewest slots c ≥ ⌈a⌉ (a = rps × lat, the offered load) for which an
// M/M/c queue keeps the probability of a sub-request waiting longer than deadline − lat at most
// miss, and the reason. A model with no slack (lat ≥ deadline) falls back to Cocktail's
// square-root staffing (cocktail.PoolSlots, β = cocktail.DefaultStaffing).
func sloserveSlots(rps float64, lat, deadline time.Duration, miss float64) (float64, string) {
	a := rps * lat.Seconds()
	switch {
	case !(a > 0):
		return 0, slotsReasonIdle
	case lat >= deadline || lat <= 0:
		return cocktail.PoolSlots(rps, lat, cocktail.DefaultStaffing), slotsReasonNoSlack
	}
	s := (deadline - lat).Seconds() / lat.Seconds() // slack in service times
	// Erlang B grows one server at a time (erlangC's recursion), so each c costs O(1).
	b := 1.0
	for c := 1; ; c++ {
		b = a * b / (float64(c) + a*b)
		if float64(c) > a && erlangCOf(c, a, b)*math.Exp(-(float64(c)-a)*s) <= miss {
			return float64(c), slotsReasonDeadline
		}
	}
}

// erlangC is the probability that an arrival waits in an M/M/c queue with offered load a < c
// (Erlang's C formula, from Erlang B's recursion B_k = aB_{k−1}/(k + aB_{k−1})).
func erlangC(c int, a float64) float64 {
	if c <= 0 || a >= float64(c) {
		return 1
	}
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return erlangCOf(c, a, b)
}

// erlangCOf is Erlang C for c servers and offered load a < c from Erlang B's value b there.
func erlangCOf(c int, a, b float64) float64 {
	return float64(c) * b / (float64(c) - a*(1-b))
}
