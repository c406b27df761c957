package ensemble

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Selection is the outcome of the static part of Cocktail's model selection for one constraint
// (§4.1, objectives O1 and O2), with the reason it was chosen.
type Selection struct {
	// Constraint is what the selection was made for.
	Constraint Constraint
	// Candidates are the models meeting the latency target (O1, Alg. 1 Full_Ensemble), most
	// accurate first; the dynamic policy starts from them.
	Candidates []Model
	// Models is the cost-minimal ensemble (O2) whose predicted accuracy meets the target, most
	// accurate first.
	Models []Model
	// PredictedAccuracy is the majority-vote accuracy of Models under the binomial model
	// (EnsembleAccuracy), or the correlated one when Config.ErrorCorrelation > 0.
	PredictedAccuracy float64
	// Cost is μ_C/(k·inst_cost) = Σ 1/P_f of Models: instances needed per concurrent request.
	Cost float64
	// Latency is the ensemble's latency when members run in parallel: the slowest member's.
	Latency time.Duration
	// Met reports whether PredictedAccuracy ≥ target − Acc_margin.
	Met bool
	// Reason explains the choice.
	Reason string
}

// Names returns the names of the selected models.
func (s Selection) Names() []string { return names(s.Models) }

func names(ms []Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// Candidates returns the models whose latency is within c.Latency + margin (O1's latency side,
// Alg. 1 lines 1–6), most accurate first; ties by larger packing factor, then name.
func Candidates(models []Model, c Constraint, margin time.Duration) []Model {
	var out []Model
	for _, m := range models {
		if m.Latency <= c.Latency+margin {
			out = append(out, m)
		}
	}
	sortByAccuracy(out)
	return out
}

// sortByAccuracy orders models by accuracy descending, then packing factor descending, then name.
func sortByAccuracy(ms []Model) {
	slices.SortStableFunc(ms, func(a, b Model) int {
		switch {
		case a.Accuracy != b.Accuracy:
			if a.Accuracy > b.Accuracy {
				return -1
			}
			return 1
		case a.PackingFactor != b.PackingFactor:
			if a.PackingFactor > b.PackingFactor {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Select solves O1 and O2 of Cocktail §4.1 for constraint c: among the latency-feasible
// candidates it picks the ensemble of least cost μ_C ∝ Σ 1/P_f whose predicted majority-vote
// accuracy (EnsembleAccuracy) is ≥ c.Accuracy − Acc_margin; ties go to the higher predicted
// accuracy, then to fewer models. A single model is an ensemble of one, so when one model
// suffices Cocktail serves it alone (§2.3.1). When no subset reaches the target, Select returns
// the most accurate one with Met false. It returns ErrNoCandidate when no model meets the latency.
//
// The paper builds the list "iteratively"; for pools up to cfg.MaxExhaustive models Select
// searches every subset instead, which finds the true O2 optimum at a cost of milliseconds
// (and the result is cached per constraint). Larger pools add models greedily by accuracy.
func Select(models []Model, c Constraint, cfg Config) (Selection, error) {
	if err := c.Validate(); err != nil {
		return Selection{}, err
	}
	for _, m := range models {
		if err := m.Validate(); err != nil {
			return Selection{}, err
		}
	}
	cand := Candidates(models, c, cfg.LatencyMargin)
	if len(cand) == 0 {
		return Selection{}, fmt.Errorf("select %v: %w", c, ErrNoCandidate)
	}
	need := c.Accuracy - cfg.AccuracyMargin
	var best []Model
	if len(cand) <= cfg.MaxExhaustive {
		best = exhaustive(cand, need, cfg.ErrorCorrelation)
	} else {
		best = greedy(cand, need, cfg.ErrorCorrelation)
	}
	s := Selection{Constraint: c, Candidates: cand, Models: best}
	s.PredictedAccuracy = EnsembleAccuracyCorrelated(accuracies(best), cfg.ErrorCorrelation)
	s.Cost = cost(best)
	s.Latency = maxLatency(best)
	s.Met = s.PredictedAccuracy >= need-1e-12
	if s.Met {
		s.Reason = fmt.Sprintf("O2: cheapest of %d candidates with predicted accuracy %.4f >= %.4f: %d model(s), cost %.3f",
			len(cand), s.PredictedAccuracy, need, len(best), s.Cost)
	} else {
		s.Reason = fmt.Sprintf("target %.4f unreachable with %d candidates: most accurate ensemble predicts %.4f",
			need, len(cand), s.PredictedAccuracy)
	}
	return s, nil
}

// exhaustive returns the O2 optimum over every non-empty subset of cand (cand sorted by accuracy).
func exhaustive(cand []Model, need, rho float64) []Model {
	n := len(cand)
	var (
		bestMask          uint32
		bestCost, bestAcc = math.Inf(1), -1.0
		anyMet            bool
		bestUnmetAcc      = -1.0
		bestUnmetMask     uint32
		bestUnmetCost     = math.Inf(1)
		acc               = make([]float64, 0, n)
		bestSize          int
	)
	for mask := uint32(1); mask < 1<<n; mask++ {
		acc = acc[:0]
		cst := 0.0
		for i := range n {
			if mask&(1<<i) != 0 {
				acc = append(acc, cand[i].Accuracy)
				cst += 1 / cand[i].PackingFactor
			}
		}
		p := EnsembleAccuracyCorrelated(acc, rho)
		size := len(acc)
		if p >= need-1e-12 {
			if !anyMet || better(cst, p, size, bestCost, bestAcc, bestSize) {
				bestMask, bestCost, bestAcc, bestSize, anyMet = mask, cst, p, size, true
			}
			continue
		}
		if !anyMet && (p > bestUnmetAcc+1e-12 || (math.Abs(p-bestUnmetAcc) <= 1e-12 && cst < bestUnmetCost)) {
			bestUnmetMask, bestUnmetAcc, bestUnmetCost = mask, p, cst
		}
	}
	if !anyMet {
		bestMask = bestUnmetMask
	}
	var out []Model
	for i := range n {
		if bestMask&(1<<i) != 0 {
			out = append(out, cand[i])
		}
	}
	return out
}

// better orders feasible ensembles: lower cost, then higher accuracy, then fewer models.
func better(cst, p float64, size int, bc, bp float64, bs int) bool {
	const eps = 1e-12
	switch {
	case cst < bc-eps:
		return true
	case cst > bc+eps:
		return false
	case p > bp+eps:
		return true
	case p < bp-eps:
		return false
	}
	return size < bs
}

// greedy adds candidates by accuracy until the target is met, keeping the best prefix seen.
func greedy(cand []Model, need, rho float64) []Model {
	bestN, bestP := 1, -1.0
	for k := 1; k <= len(cand); k++ {
		p := EnsembleAccuracyCorrelated(accuracies(cand[:k]), rho)
		if p >= need-1e-12 {
			return slices.Clone(cand[:k])
		}
		if p > bestP {
			bestN, bestP = k, p
		}
	}
	return slices.Clone(cand[:bestN])
}

func accuracies(ms []Model) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = m.Accuracy
	}
	return out
}

// cost is Σ 1/P_f: instances of the reference type needed per concurrent request (μ_C/k·inst_cost).
func cost(ms []Model) float64 {
	c := 0.0
	for _, m := range ms {
		c += 1 / m.PackingFactor
	}
	return c
}

func maxLatency(ms []Model) time.Duration {
	var l time.Duration
	for _, m := range ms {
		l = max(l, m.Latency)
	}
	return l
}
