package ensemble

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Simulator defaults, chosen so that simulated ensembles behave like real ones (see SimConfig).
const (
	// DefaultSimRate is the request rate of the simulated workload, in requests per second
	// (Cocktail §5.2 scales its traces to 50 req/s).
	DefaultSimRate = 50.0
	// DefaultSimCorrelation is ρ of the Gaussian copula between models' correctness on the same
	// input. Independent errors (ρ = 0) would let nine ~70 % models vote their way to ~90 %,
	// far above what real ImageNet ensembles reach; ρ = 0.6 gives the full ensemble of the
	// nine-model table a gain of a few points over its best member, in line with Cocktail
	// Fig. 3a and Table 3.
	DefaultSimCorrelation = 0.6
	// DefaultSimConfusers is how many look-alike classes each class's wrong answers fall into.
	DefaultSimConfusers = 5
	// DefaultSimSharedConfusion is the probability that a wrong model picks the input's common
	// look-alike class rather than its own draw: models confuse the same images the same way.
	DefaultSimSharedConfusion = 0.5
)

// SimConfig describes the synthetic workload of the ensemble simulator.
type SimConfig struct {
	// Seed makes the run reproducible: the same seed gives the same inputs and per-model
	// answers to every strategy (common random numbers).
	Seed uint64
	// Requests is the number of requests; > 0.
	Requests int
	// Rate is the arrival rate in requests per second; it maps requests onto the dynamic
	// policy's 30 s intervals; > 0 (default 50).
	Rate float64
	// Correlation is ρ in [0, 1) between models' correctness on one input (default 0.6).
	Correlation float64
	// Confusers is the number of look-alike classes per class, ≥ 1 (default 5).
	Confusers int
	// SharedConfusion is in [0, 1] (default 0.5).
	SharedConfusion float64
	// LabelFraction is the fraction of requests whose label comes back as feedback, in (0, 1]
	// (default 1).
	LabelFraction float64
}

// DefaultSimConfig returns the simulator defaults with the given seed and request count.
func DefaultSimConfig(seed uint64, requests int) SimConfig {
	return SimConfig{Seed: seed, Requests: requests, Rate: DefaultSimRate, Correlation: DefaultSimCorrelation,
		Confusers: DefaultSimConfusers, SharedConfusion: DefaultSimSharedConfusion, LabelFraction: 1}
}

// Validate reports the first field of c that is out of range.
func (c SimConfig) Validate() error {
	switch {
	case c.Requests <= 0:
		return fmt.Errorf("sim.requests: must be > 0, got %d", c.Requests)
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("sim.rate: must be > 0, got %v", c.Rate)
	case !(c.Correlation >= 0 && c.Correlation < 1):
		return fmt.Errorf("sim.correlation: must be in [0, 1), got %v", c.Correlation)
	case c.Confusers < 1:
		return fmt.Errorf("sim.confusers: must be >= 1, got %d", c.Confusers)
	case !(c.SharedConfusion >= 0 && c.SharedConfusion <= 1):
		return fmt.Errorf("sim.shared_confusion: must be in [0, 1], got %v", c.SharedConfusion)
	case !(c.LabelFraction > 0 && c.LabelFraction <= 1):
		return fmt.Errorf("sim.label_fraction: must be in (0, 1], got %v", c.LabelFraction)
	}
	return nil
}

// Strategy is one way of serving the simulated requests.
type Strategy struct {
	// Name labels the result.
	Name string
	// Models is the fixed ensemble, or the initial one when Dynamic.
	Models []string
	// Dynamic runs Cocktail's dynamic selection over Pool starting from Models.
	Dynamic bool
	// Weighted uses class-weighted voting (learned from feedback) instead of plain majority.
	Weighted bool
	// Soft votes with the members' class probabilities (VoteSoft, or VoteWeightedSoft with
	// Weighted) instead of their top-1 classes; the stream must carry probabilities (real models
	// do, the ImageNet oracle does not).
	Soft bool
	// Mode is what the class weights measure (default Precision).
	Mode WeightMode
	// EarlyExit > 0 queries the ensemble's members one at a time, most accurate first, and stops
	// as soon as the vote is decided (Tally.Decided with reach = EarlyExit × the unqueried
	// members' summed Tally.Reach): per-request dynamic selection. 1 is exact — the answer is the
	// one the whole ensemble would give with the same weights; a smaller value stops sooner,
	// betting that the remaining members will not all back the runner-up. 0 queries every
	// member. With weighted voting the weights learn only from the members queried, so a member
	// reached mostly on hard requests earns a lower weight than it would in the full ensemble
	// (on the bundled models that helps: docs/cocktail.md).
	EarlyExit float64
}

// Voting returns the strategy's voting scheme.
func (s Strategy) Voting() Voting {
	switch {
	case s.Soft && s.Weighted:
		return VoteWeightedSoft
	case s.Soft:
		return VoteSoft
	case s.Weighted:
		return VoteWeighted
	}
	return VoteMajority
}

// SimResult is what one strategy achieved on the simulated workload.
type SimResult struct {
	Name        string  `json:"name"`
	Requests    int     `json:"requests"`
	Accuracy    float64 `json:"accuracy"`
	MeanModels  float64 `json:"mean_models"`
	Invocations int     `json:"invocations"`
	// Ties counts requests whose top vote count was shared; TiesCorrect how many of them the
	// vote still answered correctly.
	Ties        int `json:"ties"`
	TiesCorrect int `json:"ties_correct"`
	// Changes counts the dynamic policy's ensemble changes.
	Changes int `json:"changes"`
	// LatencyMS is the mean ensemble latency (slowest member) over requests, in milliseconds.
	LatencyMS float64 `json:"latency_ms"`
}

// Simulate serves cfg.Requests synthetic inputs with strategy s and reports accuracy and model
// invocations. Each input's class is uniform over the table's classes; model m answers class c
// correctly with probability Rate[m][c], its correctness correlated across models through a
// Gaussian copula with ρ = cfg.Correlation (hard images are hard for every model); a wrong
// answer is one of the class's look-alike classes, shared between models with probability
// cfg.SharedConfusion. pool gives each table model's latency and packing factor (names must
// match table rows); c is the constraint the dynamic policy works to. The run is deterministic
// for a given cfg.Seed, and every strategy sees the same answers from the same models.
func Simulate(t *ClassTable, pool []Model, s Strategy, c Constraint, ecfg Config, cfg SimConfig) (SimResult, error) {
	if err := cfg.Validate(); err != nil {
		return SimResult{}, err
	}
	o, err := NewOracle(t, cfg)
	if err != nil {
		return SimResult{}, err
	}
	if s.Soft {
		return SimResult{}, fmt.Errorf("simulate %s: the oracle answers top-1 classes only, not probabilities", s.Name)
	}
	draw := func(_ int, answer []int, _ [][]float32) request {
		label, feedback := o.Draw(answer)
		return request{label: label, feedback: feedback, scored: true}
	}
	return serve(t.Models, pool, s, c, ecfg, cfg.Requests, cfg.Rate, draw, nil)
}

// request is one input of a served stream: its true label, whether the label comes back as
// feedback, and whether the request counts in the reported accuracy.
type request struct {
	label            int
	feedback, scored bool
}

// serve runs strategy s over n requests arriving at rate per second; next fills answer (indexed
// like rows) with every model's top-1 answer to request i — and, when it has them, probs with
// every model's class probabilities — and describes the request. It is the one serving loop
// behind Simulate and Evaluate: vote, learn class weights from feedback, and let the dynamic
// policy step at each interval boundary. prime, when not nil, teaches the class weights before
// the first request (Evaluate: the validation answers).
//
// Latency is the slowest queried member's (members run in parallel), except under EarlyExit,
// where members are queried in stages: first, in parallel, the shortest most-accurate-first
// prefix whose votes could decide the request on their own, then one member at a time; a
// request's latency is the slowest member of the first stage plus each later member's.
func serve(rows []string, pool []Model, s Strategy, c Constraint, ecfg Config, n int, rate float64,
	next func(i int, answer []int, probs [][]float32) request, prime func(*ClassWeights)) (SimResult, error) {
	row := map[string]int{}
	for i, r := range rows {
		row[r] = i
	}
	byName := map[string]Model{}
	for _, m := range pool {
		if _, ok := row[m.Name]; !ok {
			return SimResult{}, fmt.Errorf("serve %s: pool model %q has no answers", s.Name, m.Name)
		}
		byName[m.Name] = m
	}
	for _, m := range s.Models {
		if _, ok := byName[m]; !ok {
			return SimResult{}, fmt.Errorf("serve %s: model %q is not in the pool", s.Name, m)
		}
	}
	if len(s.Models) == 0 && !s.Dynamic {
		return SimResult{}, fmt.Errorf("serve %s: no models", s.Name)
	}
	if !(s.EarlyExit >= 0 && s.EarlyExit <= 1) {
		return SimResult{}, fmt.Errorf("serve %s: early exit %v must be in [0, 1]", s.Name, s.EarlyExit)
	}
	start := time.Unix(0, 0).UTC()
	active := s.Models
	var dyn *Dynamic
	if s.Dynamic {
		var err error
		if dyn, err = NewDynamic(ecfg, c, pool, s.Models, start); err != nil {
			return SimResult{}, err
		}
		active = dyn.Models()
	}
	weights := NewClassWeights(s.Mode, 0)
	for _, m := range pool {
		weights.SetPrior(m.Name, m.Accuracy)
	}
	if prime != nil {
		prime(weights)
	}
	tally, err := NewTally(s.Voting(), weights)
	if err != nil {
		return SimResult{}, err
	}
	nextStep := start.Add(ecfg.Interval)
	answer := make([]int, len(rows))
	probs := make([][]float32, len(rows))
	preds := make([]Prediction, 0, len(rows))
	reach := make([]float64, 0, len(rows))
	res := SimResult{Name: s.Name}
	var latSum, right float64
	for i := range n {
		now := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if dyn != nil && !now.Before(nextStep) {
			d := dyn.Step(now)
			nextStep, active = d.Next, d.Models
			if d.Changed() {
				res.Changes++
			}
		}
		clear(probs)
		rq := next(i, answer, probs)
		preds = preds[:0]
		tally.Reset()
		// rest[k] is what members k.. can add to one class, for the early-exit test.
		reach = reach[:0]
		if s.EarlyExit > 0 {
			for _, m := range active {
				reach = append(reach, tally.Reach(m))
			}
			for k := len(reach) - 2; k >= 0; k-- {
				reach[k] += reach[k+1]
			}
			reach = append(reach, 0)
		}
		var lat time.Duration
		staged := false // past the first stage
		for k, m := range active {
			r := row[m]
			if s.Soft && probs[r] == nil {
				return SimResult{}, fmt.Errorf("serve %s: request %d carries no probabilities for %q", s.Name, i, m)
			}
			if err := tally.Add(m, answer[r], probs[r]); err != nil {
				return SimResult{}, fmt.Errorf("serve %s: request %d: %w", s.Name, i, err)
			}
			preds = append(preds, Prediction{Model: m, Class: answer[r]})
			if staged {
				lat += byName[m].Latency
			} else {
				lat = max(lat, byName[m].Latency)
			}
			if s.EarlyExit > 0 {
				if tally.Decided(s.EarlyExit * reach[k+1]) {
					break
				}
				// The first stage ends at the first prefix that could have decided by itself.
				if !staged && reach[0]-reach[k+1] > s.EarlyExit*reach[k+1] {
					staged = true
				}
			}
		}
		v := tally.Verdict()
		ok := v.Class == rq.label
		if rq.scored {
			res.Requests++
			res.Invocations += len(preds)
			latSum += float64(lat) / float64(time.Millisecond)
			if ok {
				right++
			}
			if v.Tie {
				res.Ties++
				if ok {
					res.TiesCorrect++
				}
			}
		}
		label := -1
		if rq.feedback {
			label = rq.label
			weights.Learn(preds, rq.label)
		}
		if dyn != nil {
			dyn.Record(preds, v, label)
		}
	}
	if res.Requests > 0 {
		res.Accuracy = right / float64(res.Requests)
		res.MeanModels = float64(res.Invocations) / float64(res.Requests)
		res.LatencyMS = latSum / float64(res.Requests)
	}
	return res, nil
}

// geometric maps a uniform u to 0, 1, 2, … with probabilities 1/2, 1/4, …, capped at k−1.
func geometric(u float64, k int) int {
	if u <= 0 {
		return k - 1
	}
	j := int(-math.Log2(u))
	return min(j, k-1)
}

// confusers draws, for each class, k distinct other classes (its look-alikes), deterministically.
func confusers(nc, k int, seed uint64) [][]int {
	rng := rand.New(rand.NewPCG(seed^0x5851f42d4c957f2d, 1))
	out := make([][]int, nc)
	for c := range out {
		kk := min(k, nc-1)
		out[c] = make([]int, k)
		if kk == 0 {
			for j := range out[c] {
				out[c][j] = -1 // a single class: a wrong answer is "no class"
			}
			continue
		}
		picked := map[int]bool{c: true}
		for j := 0; j < k; j++ {
			if j >= kk {
				out[c][j] = out[c][j%kk]
				continue
			}
			for {
				x := rng.IntN(nc)
				if !picked[x] {
					picked[x] = true
					out[c][j] = x
					break
				}
			}
		}
	}
	return out
}
