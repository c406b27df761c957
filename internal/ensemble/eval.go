package ensemble

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Answers holds real models' predictions on a labelled sample.
type Answers struct {
	// Models describes each model (latency measured, accuracy on the sample, packing factor).
	Models []Model
	// Pred[m][i] is model m's predicted class for image i.
	Pred [][]int
	// Labels[i] is image i's true class.
	Labels []int
}

// Validate checks that the answers are rectangular and the models valid.
func (a Answers) Validate() error {
	if len(a.Models) == 0 || len(a.Labels) == 0 {
		return errors.New("answers: need at least one model and one image")
	}
	if len(a.Pred) != len(a.Models) {
		return fmt.Errorf("answers: %d prediction rows for %d models", len(a.Pred), len(a.Models))
	}
	for i, m := range a.Models {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("answers: %w", err)
		}
		if len(a.Pred[i]) != len(a.Labels) {
			return fmt.Errorf("answers: model %q has %d predictions for %d images", m.Name, len(a.Pred[i]), len(a.Labels))
		}
	}
	return nil
}

// EvalConfig describes how Evaluate streams the sample.
type EvalConfig struct {
	// Passes is how many times the sample is streamed (shuffled each pass); ≥ 1 (default 30).
	Passes int
	// Rate is the request rate in requests per second, which maps requests onto the dynamic
	// policy's intervals; > 0 (default 50, Cocktail §5.2).
	Rate float64
	// Seed fixes the shuffles.
	Seed uint64
	// CrossFit holds labels out: with it, even-indexed images give feedback and odd ones are
	// scored, then the halves swap; without it (the default) every request is answered first and
	// its label fed back afterwards (prequential, as at run time), and every request is scored.
	CrossFit bool
}

// DefaultEvalConfig returns 30 passes at 50 req/s with seed 1.
func DefaultEvalConfig() EvalConfig { return EvalConfig{Passes: 30, Rate: DefaultSimRate, Seed: 1} }

// Validate reports the first field of c that is out of range.
func (c EvalConfig) Validate() error {
	if c.Passes < 1 {
		return fmt.Errorf("eval.passes: must be >= 1, got %d", c.Passes)
	}
	if !(c.Rate > 0) || math.IsInf(c.Rate, 0) {
		return fmt.Errorf("eval.rate: must be > 0, got %v", c.Rate)
	}
	return nil
}

// EvalSingle is one model's result on the sample.
type EvalSingle struct {
	Model     string  `json:"model"`
	Accuracy  float64 `json:"accuracy"`
	LatencyMS float64 `json:"latency_ms"`
}

// EvalVoting is an ensemble's result under one voting scheme.
type EvalVoting struct {
	Accuracy   float64 `json:"accuracy"`
	MeanModels float64 `json:"mean_models"`
	LatencyMS  float64 `json:"latency_ms"`
	// Changes counts the dynamic policy's ensemble changes (0 for fixed ensembles).
	Changes int `json:"changes,omitempty"`
}

// EvalEnsemble is an ensemble strategy's result: class-weighted voting at the top level and
// plain majority voting under "plain".
type EvalEnsemble struct {
	Models []string `json:"models"`
	EvalVoting
	Plain EvalVoting `json:"plain"`
}

// EvalReport is Cocktail's comparison on real models (the JSON of `sloserve ensemble eval`).
type EvalReport struct {
	// Baseline is the single model whose accuracy the ensembles chase (Table 3's "BL").
	Baseline string `json:"baseline"`
	// TargetAccuracy and LatencyMS are the constraint the candidates and the dynamic policy use.
	TargetAccuracy float64 `json:"target_accuracy"`
	LatencyMS      float64 `json:"constraint_latency_ms"`
	// Requests is the number of scored requests per strategy (sample size × passes).
	Requests int          `json:"requests"`
	Single   []EvalSingle `json:"single"`
	// Full is every candidate (Clipper-like), Static the top ⌊N/2⌋ candidates (§3), Dynamic
	// Cocktail's selection starting from Full.
	Full    EvalEnsemble `json:"full"`
	Static  EvalEnsemble `json:"static"`
	Dynamic EvalEnsemble `json:"dynamic"`
}

// Evaluate runs Cocktail's strategies on real predictions. The candidates are the models
// meeting c's latency (Table 3: every model faster than the baseline); full, static (top
// ⌊N/2⌋ by accuracy) and dynamic (Alg. 1 from the full set, target c.Accuracy) are each run
// with class-weighted and with plain majority voting. The sample is streamed cfg.Passes times
// in shuffled order. By default the evaluation is prequential: each request is answered, then
// its label is fed back (class weights and the dynamic policy learn from it), and every request
// is scored — from the second pass on, weights include earlier passes over the same images.
// With cfg.CrossFit, two folds hold labels out instead: in fold one the even-indexed images
// return labels and the odd ones are scored, fold two swaps them; no reported answer is then
// voted by weights learned from its own image, at the price of feedback from half the sample
// (whose accuracy can differ from the whole sample's by a point, which the dynamic policy,
// chasing a target measured on the whole sample, then over-corrects).
func Evaluate(a Answers, c Constraint, ecfg Config, cfg EvalConfig) (EvalReport, error) {
	if err := a.Validate(); err != nil {
		return EvalReport{}, err
	}
	if err := cfg.Validate(); err != nil {
		return EvalReport{}, err
	}
	if err := ecfg.Validate(); err != nil {
		return EvalReport{}, err
	}
	if err := c.Validate(); err != nil {
		return EvalReport{}, err
	}
	rep := EvalReport{TargetAccuracy: c.Accuracy, LatencyMS: ms64(c.Latency)}
	names := make([]string, len(a.Models))
	for i, m := range a.Models {
		names[i] = m.Name
		right := 0
		for j, p := range a.Pred[i] {
			if p == a.Labels[j] {
				right++
			}
		}
		rep.Single = append(rep.Single, EvalSingle{Model: m.Name, Accuracy: float64(right) / float64(len(a.Labels)), LatencyMS: ms64(m.Latency)})
	}
	cand := Candidates(a.Models, c, ecfg.LatencyMargin)
	if len(cand) == 0 {
		return EvalReport{}, fmt.Errorf("evaluate %v: %w", c, ErrNoCandidate)
	}
	all := namesOf(cand)
	static := all[:max(1, len(all)/2)]
	run := func(models []string, dynamic bool) (EvalEnsemble, error) {
		out := EvalEnsemble{Models: models}
		for _, weighted := range []bool{true, false} {
			s := Strategy{Name: "eval", Models: models, Dynamic: dynamic, Weighted: weighted}
			var sum SimResult
			folds := 1
			if cfg.CrossFit {
				folds = 2
			}
			for fold := range folds {
				r, err := serve(names, cand, s, c, ecfg, cfg.Passes*len(a.Labels), cfg.Rate, a.stream(cfg, fold))
				if err != nil {
					return EvalEnsemble{}, err
				}
				sum.Requests += r.Requests
				sum.Invocations += r.Invocations
				sum.Accuracy += r.Accuracy * float64(r.Requests)
				sum.LatencyMS += r.LatencyMS * float64(r.Requests)
				sum.Changes += r.Changes
			}
			v := EvalVoting{Accuracy: sum.Accuracy / float64(sum.Requests), MeanModels: float64(sum.Invocations) / float64(sum.Requests),
				LatencyMS: sum.LatencyMS / float64(sum.Requests), Changes: sum.Changes}
			if weighted {
				out.EvalVoting = v
			} else {
				out.Plain = v
			}
			rep.Requests = sum.Requests
		}
		return out, nil
	}
	var err error
	if rep.Full, err = run(all, false); err != nil {
		return EvalReport{}, err
	}
	if rep.Static, err = run(static, false); err != nil {
		return EvalReport{}, err
	}
	if rep.Dynamic, err = run(all, true); err != nil {
		return EvalReport{}, err
	}
	return rep, nil
}

// stream returns the request generator of one fold: Passes shuffled passes over the sample;
// with cross-fitting, images with index parity == fold give feedback and the others are scored,
// otherwise every image does both.
func (a Answers) stream(cfg EvalConfig, fold int) func(i int, answer []int) request {
	n := len(a.Labels)
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(fold)+1))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return func(i int, answer []int) request {
		if i%n == 0 {
			rng.Shuffle(n, func(x, y int) { order[x], order[y] = order[y], order[x] })
		}
		img := order[i%n]
		for m := range a.Pred {
			answer[m] = a.Pred[m][img]
		}
		if !cfg.CrossFit {
			return request{label: a.Labels[img], feedback: true, scored: true}
		}
		fb := img%2 == fold
		return request{label: a.Labels[img], feedback: fb, scored: !fb}
	}
}

func namesOf(ms []Model) []string { return slices.Clone(names(ms)) }

func ms64(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1000 }

// Baseline returns the constraint of Cocktail's Table 3 experiment for the named model (the
// most accurate on the sample when name is empty, ties to the faster): the ensemble must reach
// the baseline's sample accuracy with models strictly faster than it. Use it with a
// LatencyMargin of 0 when models run in microseconds.
func (a Answers) Baseline(name string) (Constraint, string, error) {
	if err := a.Validate(); err != nil {
		return Constraint{}, "", err
	}
	best := -1
	bestAcc := -1.0
	for i, m := range a.Models {
		right := 0
		for j, p := range a.Pred[i] {
			if p == a.Labels[j] {
				right++
			}
		}
		acc := float64(right) / float64(len(a.Labels))
		switch {
		case name != "" && m.Name == name:
			return Constraint{Latency: m.Latency - 1, Accuracy: acc}, m.Name, nil
		case name == "" && (acc > bestAcc || (acc == bestAcc && m.Latency < a.Models[best].Latency)):
			best, bestAcc = i, acc
		}
	}
	if name != "" {
		return Constraint{}, "", fmt.Errorf("baseline %q: no such model", name)
	}
	return Constraint{Latency: a.Models[best].Latency - 1, Accuracy: bestAcc}, a.Models[best].Name, nil
}
