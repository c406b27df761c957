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

// EvalConfig describes how Evaluate streams the test answers.
type EvalConfig struct {
	// Passes is how many times the test answers are streamed (shuffled each pass); ≥ 1
	// (default 1). More than one pass replays scored images whose labels the class weights
	// have already learned: an experiment, never a claim (EVALUATION.md rule 5).
	Passes int
	// Rate is the request rate in requests per second, which maps requests onto the dynamic
	// policy's intervals; > 0 (default 50, Cocktail §5.2).
	Rate float64
	// Seed fixes the shuffles.
	Seed uint64
	// EarlyExit is the early-exit strategy's slack in (0, 1) (Strategy.EarlyExit; default 0.5:
	// stop once the unqueried members could overturn the vote only by giving the runner-up, on
	// average, more than half of their weight over the leader). The exact early exit (1) is
	// always reported too.
	EarlyExit float64
}

// DefaultEvalConfig returns one pass at 50 req/s with seed 1 and an early-exit slack of 0.5.
func DefaultEvalConfig() EvalConfig {
	return EvalConfig{Passes: 1, Rate: DefaultSimRate, Seed: 1, EarlyExit: DefaultEarlyExit}
}

// DefaultEarlyExit is EvalConfig.EarlyExit's default: the unqueried members would have to put,
// on average, more than half their weight behind the runner-up (docs/cocktail.md).
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

// EvalSingle is one model's result.
type EvalSingle struct {
	Model string `json:"model"`
	// Accuracy is measured on the test answers; ValidationAccuracy on the validation answers,
	// which rank the candidates and choose the baseline.
	Accuracy           float64 `json:"accuracy"`
	ValidationAccuracy float64 `json:"validation_accuracy"`
	LatencyMS          float64 `json:"latency_ms"`
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
	// EvalSelect is the fixed ensemble Select (O2) chooses for the target with the error
	// correlation fitted on the validation answers.
	EvalSelect = "select"
	// EvalDynamicSelect is Alg. 1 (Dynamic) starting from EvalSelect's ensemble — §4.1's O1
	// "probabilistic ensemble that satisfies Acc_target" — instead of every candidate.
	EvalDynamicSelect = "dynamic-select"
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
	// Requests is the number of scored requests per strategy (test answers × passes);
	// ValidationImages the number of validation answers that chose and primed everything.
	Requests         int `json:"requests"`
	ValidationImages int `json:"validation_images"`
	// ErrorCorrelation is the latent correlation of the candidates' correctness fitted on the
	// validation answers (FitCorrelation), with which Select predicts.
	ErrorCorrelation float64 `json:"error_correlation"`
	// Predictions compares Select's accuracy model with measured plain-majority accuracy for
	// the most-accurate-first prefixes of the candidates.
	Predictions []EvalPrediction `json:"predictions"`
	// Batch is the batch size of EvalSingle.BatchLatencyMS (0 when not measured).
	Batch  int          `json:"batch,omitempty"`
	Single []EvalSingle `json:"single"`
	// Ensembles holds EvalFull, EvalStatic, EvalDynamic, EvalExitExact, EvalExit, EvalSelect
	// and EvalDynamicSelect, in that order.
	Ensembles []EvalEnsemble `json:"ensembles"`
}

// EvalPrediction is one ensemble's predicted and measured majority-vote accuracy.
type EvalPrediction struct {
	Models []string `json:"models"`
	// Independent is EnsembleAccuracy (the paper's independence assumption); Correlated is
	// EnsembleAccuracyCorrelated with the fitted correlation.
	Independent float64 `json:"independent"`
	Correlated  float64 `json:"correlated"`
	// Validation and Test are the measured plain-majority accuracies (one vote per member,
	// ties to the most accurate member's class).
	Validation float64 `json:"validation"`
	Test       float64 `json:"test"`
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

// Evaluate runs Cocktail's strategies on real predictions without scoring on what chose: every
// choice comes from val, the validation answers (held-out training images) — the models'
// accuracies, hence the candidate ranking, the static membership and the dynamic policy's
// pool order; the class weights' priors (each model's accuracy, then one Learn over every
// validation image); the error correlation Select predicts with — and test, the test answers
// (same models, same order), is scored in cfg.Passes shuffled passes (one by default). The
// candidates are the models meeting c's latency (Table 3: every model faster than the
// baseline), most accurate first. Seven strategies are each run under every voting scheme the
// answers allow (the soft ones need Answers.Prob): full, static (top ⌊N/2⌋), dynamic (Alg. 1
// from the full set, target c.Accuracy), per-request early exit over the full set, exact and
// with cfg.EarlyExit's slack, select (O2 with the fitted correlation) and Alg. 1 starting from
// select's ensemble. The stream is
// prequential, as at run time: each request is answered, then its label is fed back to the
// class weights and the dynamic policy; no answer ever sees its own label.
func Evaluate(val, test Answers, c Constraint, ecfg Config, cfg EvalConfig) (EvalReport, error) {
	if err := val.Validate(); err != nil {
		return EvalReport{}, fmt.Errorf("validation %w", err)
	}
	if err := test.Validate(); err != nil {
		return EvalReport{}, fmt.Errorf("test %w", err)
	}
	if len(val.Models) != len(test.Models) || (val.Prob == nil) != (test.Prob == nil) {
		return EvalReport{}, fmt.Errorf("evaluate: %d validation and %d test models (probabilities %v and %v)",
			len(val.Models), len(test.Models), val.Prob != nil, test.Prob != nil)
	}
	for i := range val.Models {
		if val.Models[i].Name != test.Models[i].Name {
			return EvalReport{}, fmt.Errorf("evaluate: model %d is %q in validation, %q in test", i, val.Models[i].Name, test.Models[i].Name)
		}
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
	rep := EvalReport{TargetAccuracy: c.Accuracy, LatencyMS: ms64(c.Latency), ValidationImages: len(val.Labels)}
	if test.BatchLatency != nil {
		rep.Batch = test.Batch
	}
	// The models as choices see them: measured latency and packing factor, validation accuracy.
	pool := slices.Clone(test.Models)
	names := make([]string, len(pool))
	for i := range pool {
		pool[i].Accuracy = max(val.accuracy(i), 1e-9)
		names[i] = pool[i].Name
		s := EvalSingle{Model: pool[i].Name, Accuracy: test.accuracy(i), ValidationAccuracy: val.accuracy(i), LatencyMS: ms64(pool[i].Latency)}
		if test.BatchLatency != nil {
			s.BatchLatencyMS = ms64(test.BatchLatency[i])
		}
		rep.Single = append(rep.Single, s)
	}
	cand := Candidates(pool, c, ecfg.LatencyMargin)
	if len(cand) == 0 {
		return EvalReport{}, fmt.Errorf("evaluate %v: %w", c, ErrNoCandidate)
	}
	all := namesOf(cand)
	static := all[:max(1, len(all)/2)]
	row := map[string]int{}
	for i, n := range names {
		row[n] = i
	}
	var right [][]bool
	for _, n := range all {
		r := make([]bool, len(val.Labels))
		for j, p := range val.Pred[row[n]] {
			r[j] = p == val.Labels[j]
		}
		right = append(right, r)
	}
	if len(all) >= 2 {
		rep.ErrorCorrelation = FitCorrelation(right)
	}
	for k := 1; k <= len(all); k++ {
		acc := accuracies(cand[:k])
		rep.Predictions = append(rep.Predictions, EvalPrediction{Models: all[:k],
			Independent: EnsembleAccuracy(acc), Correlated: EnsembleAccuracyCorrelated(acc, rep.ErrorCorrelation),
			Validation: val.majority(all[:k], row), Test: test.majority(all[:k], row)})
	}
	scfg := ecfg
	scfg.ErrorCorrelation = rep.ErrorCorrelation
	sel, err := Select(pool, c, scfg)
	if err != nil {
		return EvalReport{}, err
	}
	prime := func(w *ClassWeights) {
		preds := make([]Prediction, len(names))
		for j, label := range val.Labels {
			for m, n := range names {
				preds[m] = Prediction{Model: n, Class: val.Pred[m][j]}
			}
			w.Learn(preds, label)
		}
	}
	votings := []Voting{VoteMajority, VoteWeighted}
	if test.Prob != nil {
		votings = Votings
	}
	run := func(name string, models []string, dynamic bool, exit float64) (EvalEnsemble, error) {
		out := EvalEnsemble{Name: name, Models: models, EarlyExit: exit}
		for _, v := range votings {
			s := Strategy{Name: name, Models: models, Dynamic: dynamic, Weighted: v.Weighted(), Soft: v.Soft(), EarlyExit: exit}
			r, err := serve(names, cand, s, c, ecfg, cfg.Passes*len(test.Labels), cfg.Rate, test.stream(cfg), prime)
			if err != nil {
				return EvalEnsemble{}, err
			}
			out.Votes = append(out.Votes, EvalVoting{Voting: v.String(), Accuracy: r.Accuracy,
				MeanModels: r.MeanModels, LatencyMS: r.LatencyMS, Changes: r.Changes})
			rep.Requests = r.Requests
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
		{EvalSelect, sel.Names(), false, 0},
		{EvalDynamicSelect, sel.Names(), true, 0},
	} {
		r, err := run(e.name, e.models, e.dynamic, e.exit)
		if err != nil {
			return EvalReport{}, err
		}
		rep.Ensembles = append(rep.Ensembles, r)
	}
	return rep, nil
}

// accuracy returns model m's accuracy on the answers.
func (a Answers) accuracy(m int) float64 {
	right := 0
	for j, p := range a.Pred[m] {
		if p == a.Labels[j] {
			right++
		}
	}
	return float64(right) / float64(len(a.Labels))
}

// majority returns the plain-majority accuracy of the named models (Majority: one vote each,
// ties to the class voted first, in the given order).
func (a Answers) majority(models []string, row map[string]int) float64 {
	right := 0
	preds := make([]Prediction, len(models))
	for j, label := range a.Labels {
		for k, n := range models {
			preds[k] = Prediction{Model: n, Class: a.Pred[row[n]][j]}
		}
		if Majority(preds).Class == label {
			right++
		}
	}
	return float64(right) / float64(len(a.Labels))
}

// stream returns the request generator over the answers: Passes shuffled passes, every request
// scored and its label fed back after the answer.
func (a Answers) stream(cfg EvalConfig) func(i int, answer []int, probs [][]float32) request {
	n := len(a.Labels)
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
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
		return request{label: a.Labels[img], feedback: true, scored: true}
	}
}

func namesOf(ms []Model) []string { return slices.Clone(names(ms)) }

func ms64(d interface{ Seconds() float64 }) float64 { return d.Seconds() * 1000 }

// Baseline returns the constraint of Cocktail's Table 3 experiment for the named model (the
// most accurate on these answers when name is empty, ties to the faster): the ensemble must
// reach the baseline's accuracy on them with models strictly faster than it. Call it on
// validation answers carrying the measured latencies. Use it with a
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
