package ensemble

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Answers holds real models' predictions on a labelled sample.
type Answers struct {
	// Models describes each model (latency measured, accuracy on the sample, packing factor).
	Models []Model
	// Pred[m][i] is model m's predicted class for image i.
	Pred [][]int
	// Prob[m] holds model m's class probabilities, Classes per image, image after image
	// (Prob[m][i*Classes+c]); nil when only top-1 classes are known, which leaves the soft
	// voting schemes out of Evaluate.
	Prob [][]float32
	// Classes is the width of a Prob row.
	Classes int
	// Batch and BatchLatency[m] are a batch size > 1 and model m's latency for a batch of that
	// many images (0 and nil when not measured; Models[m].Latency is the batch-1 latency).
	Batch        int
	BatchLatency []time.Duration
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
	if a.Prob != nil && (len(a.Prob) != len(a.Models) || a.Classes < 1) {
		return fmt.Errorf("answers: %d probability rows of %d classes for %d models", len(a.Prob), a.Classes, len(a.Models))
	}
	if a.BatchLatency != nil && (len(a.BatchLatency) != len(a.Models) || a.Batch < 2) {
		return fmt.Errorf("answers: %d batch latencies at batch %d for %d models", len(a.BatchLatency), a.Batch, len(a.Models))
	}
	for i, m := range a.Models {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("answers: %w", err)
		}
		if len(a.Pred[i]) != len(a.Labels) {
			return fmt.Errorf("answers: model %q has %d predictions for %d images", m.Name, len(a.Pred[i]), len(a.Labels))
		}
		if a.Prob != nil && len(a.Prob[i]) != len(a.Labels)*a.Classes {
			return fmt.Errorf("answers: model %q has %d probabilities for %d images of %d classes", m.Name, len(a.Prob[i]), len(a.Labels), a.Classes)
		}
		for j, p := range a.Pred[i] {
			if p < 0 || (a.Prob != nil && p >= a.Classes) {
				return fmt.Errorf("answers: model %q predicts class %d for image %d", m.Name, p, j)
			}
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
	// EarlyExit is the early-exit strategy's slack in (0, 1) (Strategy.EarlyExit; default 0.5:
	// stop once the unqueried members could overturn the vote only by giving the runner-up, on
	// average, more than half of their weight over the leader). The exact early exit (1) is
	// always reported too.
	EarlyExit float64
}

// DefaultEvalConfig returns 30 passes at 50 req/s with seed 1 and an early-exit slack of 0.5.
func DefaultEvalConfig() EvalConfig {
	return EvalConfig{Passes: 30, Rate: DefaultSimRate, Seed: 1, EarlyExit: DefaultEarlyExit}
}

// DefaultEarlyExit is EvalConfig.EarlyExit's default. On the 13 bundled Fashion-MNIST models
// faster than mlp256 (full test set, class-weighted soft voting; docs/cocktail.md) the exact
// exit queries 6.94 of them per request, 0.7 5.98, 0.5 4.98 and 0.3 3.89, all at 0.8924–0.8928
// accuracy against the full ensemble's 0.8895 (the members are queried most accurate first, so
// the ones skipped are the weak ones). 0.5 — the unqueried members would have to put, on
// average, more than half their weight behind the runner-up — keeps a margin for members that
// disagree more than these.
const DefaultEarlyExit = 0.5

// Validate reports the first field of c that is out of range.
func (c EvalConfig) Validate() error {
	if c.Passes < 1 {
		return fmt.Errorf("eval.passes: must be >= 1, got %d", c.Passes)
	}
	if !(c.Rate > 0) || math.IsInf(c.Rate, 0) {
		return fmt.Errorf("eval.rate: must be > 0, got %v", c.Rate)
	}
	if !(c.EarlyExit > 0 && c.EarlyExit < 1) {
		return fmt.Errorf("eval.early_exit: must be in (0, 1), got %v", c.EarlyExit)
	}
	return nil
}

// EvalSingle is one model's result on the sample.
type EvalSingle struct {
	Model     string  `json:"model"`
	Accuracy  float64 `json:"accuracy"`
	LatencyMS float64 `json:"latency_ms"`
	// BatchLatencyMS is the latency of a batch of EvalReport.Batch images (0 when not measured).
	BatchLatencyMS float64 `json:"batch_latency_ms,omitempty"`
}

// EvalVoting is an ensemble's result under one voting scheme.
type EvalVoting struct {
	// Voting names the scheme (Voting.String).
	Voting     string  `json:"voting"`
	Accuracy   float64 `json:"accuracy"`
	MeanModels float64 `json:"mean_models"`
	// LatencyMS is the mean request latency: the slowest member's for a fixed ensemble, staged
	// for early exit (see serve).
	LatencyMS float64 `json:"latency_ms"`
	// Changes counts the dynamic policy's ensemble changes (0 for fixed ensembles).
	Changes int `json:"changes,omitempty"`
}

// The ensemble strategies of an EvalReport.
const (
	// EvalFull is every candidate (Clipper-like; Cocktail's Full_Ensemble).
	EvalFull = "full"
	// EvalStatic is the top ⌊N/2⌋ candidates by accuracy (§3's static ensemble).
	EvalStatic = "static"
	// EvalDynamic is Cocktail's Alg. 1 (Dynamic) starting from every candidate, stepping every
	// 30 s interval towards the target accuracy.
	EvalDynamic = "dynamic"
	// EvalExitExact queries the candidates most accurate first and stops once the rest cannot
	// change the vote (Strategy.EarlyExit = 1).
	EvalExitExact = "early-exit-exact"
	// EvalExit is the same with EvalConfig.EarlyExit's slack.
	EvalExit = "early-exit"
)

// EvalEnsemble is one ensemble strategy's result under every voting scheme.
type EvalEnsemble struct {
	Name string `json:"name"`
	// Models is the fixed ensemble, or the starting one (dynamic) or the query order (early exit).
	Models []string `json:"models"`
	// EarlyExit is the strategy's Strategy.EarlyExit (0 when it queries every member).
	EarlyExit float64      `json:"early_exit,omitempty"`
	Votes     []EvalVoting `json:"votes"`
}

// Vote returns the result under scheme v.
func (e EvalEnsemble) Vote(v Voting) (EvalVoting, bool) {
	for _, r := range e.Votes {
		if r.Voting == v.String() {
			return r, true
		}
	}
	return EvalVoting{}, false
}

// EvalReport is Cocktail's comparison on real models (the JSON of `sloserve ensemble eval`).
type EvalReport struct {
	// Baseline is the single model whose accuracy the ensembles chase (Table 3's "BL").
	Baseline string `json:"baseline"`
	// TargetAccuracy and LatencyMS are the constraint the candidates and the dynamic policy use.
	TargetAccuracy float64 `json:"target_accuracy"`
	LatencyMS      float64 `json:"constraint_latency_ms"`
	// Requests is the number of scored requests per strategy (sample size × passes).
	Requests int `json:"requests"`
	// Batch is the batch size of EvalSingle.BatchLatencyMS (0 when not measured).
	Batch  int          `json:"batch,omitempty"`
	Single []EvalSingle `json:"single"`
	// Ensembles holds EvalFull, EvalStatic, EvalDynamic, EvalExitExact and EvalExit, in that order.
	Ensembles []EvalEnsemble `json:"ensembles"`
}

// Ensemble returns the named strategy's result.
func (r EvalReport) Ensemble(name string) (EvalEnsemble, bool) {
	for _, e := range r.Ensembles {
		if e.Name == name {
			return e, true
		}
	}
	return EvalEnsemble{}, false
}

// Evaluate runs Cocktail's strategies on real predictions. The candidates are the models
// meeting c's latency (Table 3: every model faster than the baseline), most accurate first.
// Five strategies are each run under every voting scheme the answers allow (the soft ones need
// Answers.Prob): full, static (top ⌊N/2⌋ by accuracy), dynamic (Alg. 1 from the full set,
// target c.Accuracy), and per-request early exit over the full set, exact and with
// cfg.EarlyExit's slack. The sample is streamed cfg.Passes times in shuffled order. By default
// the evaluation is prequential: each request is answered, then its label is fed back (class
// weights and the dynamic policy learn from it), and every request is scored — from the second
// pass on, weights include earlier passes over the same images. With cfg.CrossFit, two folds
// hold labels out instead: in fold one the even-indexed images return labels and the odd ones
// are scored, fold two swaps them; no reported answer is then voted by weights learned from its
// own image, at the price of feedback from half the sample (whose accuracy can differ from the
// whole sample's by a point, which the dynamic policy, chasing a target measured on the whole
// sample, then over-corrects).
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
	if a.BatchLatency != nil {
		rep.Batch = a.Batch
	}
	names := make([]string, len(a.Models))
	for i, m := range a.Models {
		names[i] = m.Name
		right := 0
		for j, p := range a.Pred[i] {
			if p == a.Labels[j] {
				right++
			}
		}
		s := EvalSingle{Model: m.Name, Accuracy: float64(right) / float64(len(a.Labels)), LatencyMS: ms64(m.Latency)}
		if a.BatchLatency != nil {
			s.BatchLatencyMS = ms64(a.BatchLatency[i])
		}
		rep.Single = append(rep.Single, s)
	}
	cand := Candidates(a.Models, c, ecfg.LatencyMargin)
	if len(cand) == 0 {
		return EvalReport{}, fmt.Errorf("evaluate %v: %w", c, ErrNoCandidate)
	}
	votings := []Voting{VoteMajority, VoteWeighted}
	if a.Prob != nil {
		votings = Votings
	}
	all := namesOf(cand)
	static := all[:max(1, len(all)/2)]
	run := func(name string, models []string, dynamic bool, exit float64) (EvalEnsemble, error) {
		out := EvalEnsemble{Name: name, Models: models, EarlyExit: exit}
		for _, v := range votings {
			s := Strategy{Name: name, Models: models, Dynamic: dynamic, Weighted: v.Weighted(), Soft: v.Soft(), EarlyExit: exit}
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
			out.Votes = append(out.Votes, EvalVoting{Voting: v.String(), Accuracy: sum.Accuracy / float64(sum.Requests),
				MeanModels: float64(sum.Invocations) / float64(sum.Requests), LatencyMS: sum.LatencyMS / float64(sum.Requests),
				Changes: sum.Changes})
			rep.Requests = sum.Requests
		}
		return out, nil
	}
	for _, e := range []struct {
		name    string
		models  []string
		dynamic bool
		exit    float64
	}{
		{EvalFull, all, false, 0},
		{EvalStatic, static, false, 0},
		{EvalDynamic, all, true, 0},
		{EvalExitExact, all, false, 1},
		{EvalExit, all, false, cfg.EarlyExit},
	} {
		r, err := run(e.name, e.models, e.dynamic, e.exit)
		if err != nil {
			return EvalReport{}, err
		}
		rep.Ensembles = append(rep.Ensembles, r)
	}
	return rep, nil
}

// stream returns the request generator of one fold: Passes shuffled passes over the sample;
// with cross-fitting, images with index parity == fold give feedback and the others are scored,
// otherwise every image does both.
func (a Answers) stream(cfg EvalConfig, fold int) func(i int, answer []int, probs [][]float32) request {
	n := len(a.Labels)
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(fold)+1))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return func(i int, answer []int, probs [][]float32) request {
		if i%n == 0 {
			rng.Shuffle(n, func(x, y int) { order[x], order[y] = order[y], order[x] })
		}
		img := order[i%n]
		for m := range a.Pred {
			answer[m] = a.Pred[m][img]
			if a.Prob != nil {
				probs[m] = a.Prob[m][img*a.Classes : (img+1)*a.Classes]
			}
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
