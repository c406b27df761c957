package ensemble

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Dynamic is Cocktail's per-constraint dynamic model selection (Alg. 1 DYNAMIC_MODEL_SCALING,
// §4.1): every monitoring interval it compares the interval's ensemble accuracy with the target
// and either prunes the ensemble using the mode of the majority votes or up-sizes it by one
// model. It is pure: Record accumulates facts, Step(now) decides; it never reads a clock.
// A Dynamic belongs to one goroutine.
type Dynamic struct {
	cfg    Config
	target float64
	pool   []Model        // O1 candidates, most accurate first
	index  map[string]int // name -> position in pool
	active []bool
	start  time.Time // start of the current interval

	// Facts of the current interval.
	labelled, correct int
	votes             map[int]int // winning-vote count -> requests
	modelSeen         []int
	modelRight        []int
}

// Decision is the dynamic policy's answer for one Step.
type Decision struct {
	// Models is the ensemble to use from now on, most accurate (profiled) first.
	Models []string
	// Added and Dropped list the changes made by this step.
	Added, Dropped []string
	// Accuracy is the ensemble accuracy measured over the interval that just ended (labelled
	// requests only); -1 when the interval is not over or had no labelled request.
	Accuracy float64
	// LowerBound is the Wilson lower confidence bound of Accuracy at Config.PruneConfidence
	// (-1 when Accuracy is); pruning needs it, not the point estimate, to reach the threshold.
	LowerBound float64
	// Mode is the most frequent winning-vote count of the interval (0 when none).
	Mode int
	// Next is when Step should be called again.
	Next time.Time
	// Reason explains the decision.
	Reason string
}

// Changed reports whether the step changed the ensemble.
func (d Decision) Changed() bool { return len(d.Added)+len(d.Dropped) > 0 }

// NewDynamic starts the dynamic policy for constraint c over the candidate pool (normally
// Selection.Candidates) with the initial ensemble (normally all candidates: Alg. 1 starts from
// Full_Ensemble and prunes); now starts the first interval. An empty initial means all of pool.
func NewDynamic(cfg Config, c Constraint, pool []Model, initial []string, now time.Time) (*Dynamic, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("new dynamic selection %v: %w", c, ErrNoCandidate)
	}
	p := slices.Clone(pool)
	sortByAccuracy(p)
	d := &Dynamic{cfg: cfg, target: c.Accuracy, pool: p, index: make(map[string]int, len(p)),
		active: make([]bool, len(p)), start: now}
	for i, m := range p {
		if err := m.Validate(); err != nil {
			return nil, err
		}
		if _, dup := d.index[m.Name]; dup {
			return nil, fmt.Errorf("new dynamic selection: duplicate model %q", m.Name)
		}
		d.index[m.Name] = i
	}
	if len(initial) == 0 {
		for i := range d.active {
			d.active[i] = true
		}
	}
	for _, n := range initial {
		i, ok := d.index[n]
		if !ok {
			return nil, fmt.Errorf("new dynamic selection: initial model %q is not in the pool", n)
		}
		d.active[i] = true
	}
	d.reset(now)
	return d, nil
}

func (d *Dynamic) reset(now time.Time) {
	d.start = now
	d.labelled, d.correct = 0, 0
	d.votes = map[int]int{}
	d.modelSeen = make([]int, len(d.pool))
	d.modelRight = make([]int, len(d.pool))
}

// Models returns the current ensemble, most accurate (profiled) first.
func (d *Dynamic) Models() []string {
	var out []string
	for i, on := range d.active {
		if on {
			out = append(out, d.pool[i].Name)
		}
	}
	return out
}

// Size returns the number of models in the current ensemble.
func (d *Dynamic) Size() int {
	n := 0
	for _, on := range d.active {
		if on {
			n++
		}
	}
	return n
}

// Record adds one served request to the interval's facts: the members' predictions, the
// ensemble's verdict, and the true label (label < 0 when no feedback is available; such a
// request still counts for the vote mode).
func (d *Dynamic) Record(preds []Prediction, v Verdict, label int) {
	d.votes[v.Votes]++
	if label < 0 {
		return
	}
	d.labelled++
	if v.Class == label {
		d.correct++
	}
	for _, p := range preds {
		i, ok := d.index[p.Model]
		if !ok {
			continue
		}
		d.modelSeen[i]++
		if p.Class == label {
			d.modelRight[i]++
		}
	}
}

// Step ends the interval if it is over and decides the next ensemble (Alg. 1):
//
//   - the Wilson lower bound of the accuracy (Config.PruneConfidence; Alg. 1 uses the point
//     estimate, whose ±1.5 points of noise over a 30 s interval let a lucky interval prune) ≥
//     target + Acc_margin and the mode m of the winning-vote counts exceeds the needed
//     ⌊N/2⌋+1: prune to ⌊N/2⌋+1 models, rounded up to an odd count (Alg. 1 line 11 prunes
//     N − m... to ⌊N/2⌋+1, which for N = 3 leaves two models that tie, at twice the cost of
//     one), least accurate in the interval first, ties by least P_f;
//   - accuracy below the threshold: add the most accurate unused model (profiled accuracy;
//     ties by larger P_f), one at a time;
//   - otherwise keep the ensemble.
//
// An interval without labelled requests changes nothing.
func (d *Dynamic) Step(now time.Time) Decision {
	next := d.start.Add(d.cfg.Interval)
	if now.Before(next) {
		return Decision{Models: d.Models(), Accuracy: -1, LowerBound: -1, Next: next, Reason: "interval not over"}
	}
	dec := Decision{Accuracy: -1, LowerBound: -1, Next: now.Add(d.cfg.Interval), Mode: d.mode()}
	n := d.Size()
	threshold := d.target + d.cfg.AccuracyMargin
	switch {
	case d.labelled == 0:
		dec.Reason = "no labelled feedback in the interval"
	default:
		dec.Accuracy = float64(d.correct) / float64(d.labelled)
		dec.LowerBound = WilsonLower(d.correct, d.labelled, d.cfg.PruneConfidence)
		need := n/2 + 1
		keep := need | 1 // an odd ensemble: an even one ties and costs one more model
		switch {
		case d.cfg.DropOne && dec.LowerBound >= threshold && n > 1:
			dec.Dropped = d.drop(1)
			dec.Reason = fmt.Sprintf("accuracy %.4f (lower bound %.4f) >= %.4f: dropped one of %d (Clipper-X)",
				dec.Accuracy, dec.LowerBound, threshold, n)
		case !d.cfg.DropOne && dec.LowerBound >= threshold && dec.Mode > need && keep < n:
			dec.Dropped = d.drop(n - keep)
			dec.Reason = fmt.Sprintf("accuracy %.4f (lower bound %.4f) >= %.4f and vote mode %d > %d needed of %d: dropped %d",
				dec.Accuracy, dec.LowerBound, threshold, dec.Mode, need, n, len(dec.Dropped))
		case dec.Accuracy >= threshold:
			dec.Reason = fmt.Sprintf("accuracy %.4f (lower bound %.4f) >= %.4f, vote mode %d, %d needed: keep %d models",
				dec.Accuracy, dec.LowerBound, threshold, dec.Mode, need, n)
		default:
			if add, ok := d.add(); ok {
				dec.Added = []string{add}
				dec.Reason = fmt.Sprintf("accuracy %.4f < %.4f: added %s", dec.Accuracy, threshold, add)
			} else {
				dec.Reason = fmt.Sprintf("accuracy %.4f < %.4f but every candidate is in use", dec.Accuracy, threshold)
			}
		}
	}
	d.reset(now)
	dec.Models = d.Models()
	return dec
}

// mode returns the most frequent winning-vote count; ties go to the smaller count, which prunes
// less (the conservative choice the paper leaves open).
func (d *Dynamic) mode() int {
	best, bestN := 0, 0
	for v, c := range d.votes {
		if c > bestN || (c == bestN && v < best) {
			best, bestN = v, c
		}
	}
	return best
}

// drop removes k active models: least accurate over the interval first, ties by least P_f,
// then by least profiled accuracy. Models with no labelled answer this interval rank by
// profiled accuracy.
func (d *Dynamic) drop(k int) []string {
	var act []int
	for i, on := range d.active {
		if on {
			act = append(act, i)
		}
	}
	score := func(i int) float64 {
		if d.modelSeen[i] == 0 {
			return d.pool[i].Accuracy
		}
		return float64(d.modelRight[i]) / float64(d.modelSeen[i])
	}
	slices.SortStableFunc(act, func(a, b int) int {
		sa, sb := score(a), score(b)
		switch {
		case sa != sb:
			if sa < sb {
				return -1
			}
			return 1
		case d.pool[a].PackingFactor != d.pool[b].PackingFactor:
			if d.pool[a].PackingFactor < d.pool[b].PackingFactor {
				return -1
			}
			return 1
		case d.pool[a].Accuracy != d.pool[b].Accuracy:
			if d.pool[a].Accuracy < d.pool[b].Accuracy {
				return -1
			}
			return 1
		}
		return b - a
	})
	var out []string
	for _, i := range act[:k] {
		d.active[i] = false
		out = append(out, d.pool[i].Name)
	}
	return out
}

// add activates the most accurate unused model (pool is sorted by accuracy, then P_f).
func (d *Dynamic) add() (string, bool) {
	for i, on := range d.active {
		if !on {
			d.active[i] = true
			return d.pool[i].Name, true
		}
	}
	return "", false
}

// WilsonLower is the Wilson score lower bound of a binomial proportion right/n at one-sided z
// (z = 0 gives right/n); -1 when n = 0.
func WilsonLower(right, n int, z float64) float64 {
	if n <= 0 {
		return -1
	}
	p, nn := float64(right)/float64(n), float64(n)
	if z <= 0 {
		return p
	}
	z2 := z * z
	centre := p + z2/(2*nn)
	margin := z * math.Sqrt(p*(1-p)/nn+z2/(4*nn*nn))
	return (centre - margin) / (1 + z2/nn)
}
