package cocktail

import (
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/policy"
)

// SelectionMode is how an ensemble policy chooses the models of a request.
type SelectionMode uint8

// The selection modes.
const (
	// SelectDynamic is Cocktail's Alg. 1: start from the latency-feasible candidates
	// (Full_Ensemble) and let ensemble.Dynamic prune and up-size every interval, per constraint.
	SelectDynamic SelectionMode = iota
	// SelectFull uses every latency-feasible candidate, always: Alg. 1's Full_Ensemble without
	// pruning (the clipper-o1 ablation).
	SelectFull
	// SelectSingle uses one model: the cheapest candidate (largest P_f) whose accuracy meets the
	// target, else the most accurate candidate (InFaaS's model-variant selection).
	SelectSingle
	// SelectAll uses every model for every request, whatever its constraint: Clipper's static
	// full ensemble ("Clipper ... uses all 10 models throughout", Cocktail §6.2.1).
	SelectAll
)

// Ensemble policy defaults.
const (
	// DefaultStaffing is β of the square-root staffing rule c = R + β√R that turns a pool's
	// offered load R (concurrent requests, λ × latency) into slots: Cocktail sizes pools by
	// "load / P_f" without saying how much headroom absorbs Poisson bursts; β = 2 keeps the
	// probability that a request waits for a slot around 2 % (Halfin–Whitt), so queueing stays
	// well inside the 400 ms deadline.
	DefaultStaffing = 2.0
	// DefaultForecastMethod predicts the next minutes' peak rate (internal/forecast). Cocktail
	// uses DeepARest (§4.2.2); its Table 4 ranks an LSTM next. The AR model is cheap and, on the
	// one-hour runs, as good as the LSTM would be with no history to train on.
	DefaultForecastMethod = "ar"
	// DefaultForecastHorizon is T_p, how far ahead the predicted load looks: a VM's launch time
	// (§4.2.2: "T_p is defined as the average launch time for new instances"; ~100 s here).
	DefaultForecastHorizon = 2 * time.Minute
)

// Policy is one ensemble-serving strategy: how requests pick models, how votes are
// combined, and how pools are sized and priced. The decisions it names are the pure functions
// of internal/ensemble; RunEnsemble drives them.
type Policy struct {
	// Name names the policy in Summaries.
	Name string
	// Selection chooses the models of a request.
	Selection SelectionMode
	// Weighted selects class-weighted voting (§4.1.1, weights learned from label feedback);
	// false is plain majority with ties to the most accurate model.
	Weighted bool
	// Scaling sizes the pools.
	Scaling ScalingMode
	// Spot procures spot instances (Cocktail §6.2.3) instead of on-demand ones.
	Spot bool
	// Ensemble holds Cocktail's constants: 30 s interval, margins, 5 min popularity window,
	// 10 min idle timeout.
	Ensemble ensemble.Config
	// Forecast is the internal/forecast method predicting the per-minute peak rate.
	Forecast string
	// Horizon is T_p: the predicted load is the highest forecast over the next Horizon; ≥ 1 min.
	Horizon time.Duration
	// Staffing is β of the slots rule R + β√R; ≥ 0.
	Staffing float64
	// Slots, when set, replaces the slots rule: the slots a pool needs for rps requests per
	// second of a model with latency lat whose answers are due within deadline of arrival.
	Slots func(rps float64, lat, deadline time.Duration) float64
}

// PoolSlots is the number of slots p's pools need for rps of a model of latency lat.
func (p Policy) PoolSlots(rps float64, lat, deadline time.Duration) float64 {
	if p.Slots != nil {
		return p.Slots(rps, lat, deadline)
	}
	return PoolSlots(rps, lat, p.Staffing)
}

// Sizing is p's Alg. 2 configuration (Sizing.Size).
func (p Policy) Sizing() Sizing {
	return Sizing{Scaling: p.Scaling, Slots: p.PoolSlots, ReactiveStep: DefaultReactiveStep, IdleTimeout: p.Ensemble.IdleTimeout}
}

// Validate reports the first field that is out of range.
func (p Policy) Validate() error {
	if err := p.Ensemble.Validate(); err != nil {
		return err
	}
	switch {
	case p.Name == "":
		return fmt.Errorf("ensemble policy: name must not be empty")
	case p.Selection > SelectAll:
		return fmt.Errorf("ensemble policy %s: selection: unknown mode %d", p.Name, p.Selection)
	case p.Scaling > ScaleStaticPeak:
		return fmt.Errorf("ensemble policy %s: scaling: unknown mode %d", p.Name, p.Scaling)
	case p.Horizon < time.Minute:
		return fmt.Errorf("ensemble policy %s: horizon: must be ≥ 1m, got %v", p.Name, p.Horizon)
	case !(p.Staffing >= 0) || math.IsInf(p.Staffing, 0):
		return fmt.Errorf("ensemble policy %s: staffing: must be ≥ 0, got %v", p.Name, p.Staffing)
	}
	return nil
}

// Cocktail is Cocktail as published: dynamic selection per constraint every 30 s,
// class-weighted voting, importance-weighted predictive pools with cost-aware procurement and
// least-free-slot packing, 10 min idle timeout, spot instances.
func Cocktail() Policy {
	return Policy{Name: "cocktail", Selection: SelectDynamic, Weighted: true, Scaling: ScaleWeighted, Spot: true,
		Ensemble: ensemble.DefaultConfig(), Forecast: DefaultForecastMethod, Horizon: DefaultForecastHorizon, Staffing: DefaultStaffing}
}

// Clipper is Clipper as Cocktail evaluates it (§5.2.1, §6.2.1): every model in every
// ensemble, plain majority voting (ties to the most accurate model), static pools sized for the
// trace's peak, spot instances ("both Clipper and Cocktail use spot instances").
func Clipper() Policy {
	p := Cocktail()
	p.Name, p.Selection, p.Weighted, p.Scaling = "clipper", SelectAll, false, ScaleStaticPeak
	return p
}

// InFaaS is InFaaS as Cocktail evaluates it: one model per constraint (the cheapest that
// meets the accuracy target, else the most accurate), the same predictive autoscaler, on-demand
// instances ("InFaas is deployed using OnDemand instances").
func InFaaS() Policy {
	p := Cocktail()
	p.Name, p.Selection, p.Weighted, p.Spot = "infaas", SelectSingle, false, false
	return p
}

// ClipperFair is the Clipper a competent operator would run against Cocktail (issue #17):
// every latency-feasible model of each constraint (Full_Ensemble: a model slower than the
// constraint cannot be waited for), Cocktail's class-weighted voting and importance-weighted
// predictive pools, spot instances — Cocktail without dynamic selection.
func ClipperFair() Policy {
	p := Cocktail()
	p.Name, p.Selection = "clipper-fair", SelectFull
	return p
}

// ClipperX is Cocktail §5.2's Clipper-X — Clipper with a simple model selection that drops one
// model at a time (ensemble.Config.DropOne), not Cocktail's vote-mode pruning — on Cocktail's
// voting, autoscaler and spot market, as ClipperFair.
func ClipperX() Policy {
	p := Cocktail()
	p.Name = "clipper-x"
	p.Ensemble.DropOne = true
	return p
}

// InFaaSSpot is InFaaS on the same spot market as Cocktail (Cocktail ran it on-demand).
func InFaaSSpot() Policy {
	p := InFaaS()
	p.Name, p.Spot = "infaas-spot", true
	return p
}

// The ensemble policies on the registry's ensemble port; cocktail-od (on-demand instances) and
// clipper-o1 (Clipper restricted to each constraint's latency-feasible models) are ablations.
func init() {
	for _, v := range []struct {
		name, doc string
		f         func() Policy
	}{
		{"cocktail", "Cocktail (NSDI '22): dynamic ensembles per constraint (Alg. 1), class-weighted voting, importance-weighted pools (Alg. 2), spot procurement", Cocktail},
		{"clipper", "Clipper as Cocktail §6.2.1 runs it: every model for every request, majority vote, static pools for the peak, spot", Clipper},
		{"infaas", "InFaaS as Cocktail evaluates it: one model per constraint, the same autoscaler, on-demand", InFaaS},
		{"clipper-o1", "Clipper restricted to each constraint's latency-feasible models (Full_Ensemble without pruning)", func() Policy {
			p := Clipper()
			p.Name, p.Selection = "clipper-o1", SelectFull
			return p
		}},
		{"clipper-fair", "Clipper made fair (issue #17): latency-feasible full ensembles, Cocktail's voting and autoscaler, spot", ClipperFair},
		{"clipper-x", "Clipper-X (Cocktail §5.2): drop one model at a time, Cocktail's voting and autoscaler, spot", ClipperX},
		{"infaas-spot", "InFaaS on spot instances, the market Cocktail runs on", InFaaSSpot},
		{"cocktail-od", "Cocktail on on-demand instances", func() Policy {
			p := Cocktail()
			p.Name, p.Spot = "cocktail-od", false
			return p
		}},
	} {
		f := v.f
		policy.Register(policy.Spec{Name: v.name, Doc: v.doc, Port: policy.PortEnsemble,
			New: func(policy.Env, any) (any, error) { return f(), nil }})
	}
}

// SingleModel is InFaaS's choice among candidates (most accurate first): the cheapest model
// (largest P_f, then most accurate) whose accuracy is ≥ target − margin, else the most accurate.
func SingleModel(cand []ensemble.Model, target, margin float64) ensemble.Model {
	best, found := cand[0], false
	for _, m := range cand {
		if m.Accuracy < target-margin {
			continue
		}
		if !found || m.PackingFactor > best.PackingFactor {
			best, found = m, true
		}
	}
	return best
}

// PoolSlots is the number of slots a pool needs for an offered load of rps requests per second
// of latency lat: R = rps × lat concurrent requests, plus β√R of headroom (square-root staffing).
func PoolSlots(rps float64, lat time.Duration, beta float64) float64 {
	return StaffedSlots(beta)(rps, lat, 0)
}
