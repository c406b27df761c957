package ensemble

import "fmt"

// Voting is how an ensemble combines its members' answers into one.
type Voting int

// The voting schemes. The two majority schemes see only each member's top-1 class (what
// Cocktail's members return); the two soft schemes see its class probabilities (the softmax
// output every bundled classifier produces).
const (
	// VoteMajority is plain plurality voting of top-1 classes (Majority), Cocktail's baseline.
	VoteMajority Voting = iota
	// VoteWeighted is Cocktail's class-weighted majority (§4.1.1, ClassWeights.Weighted): a
	// top-1 vote for class c counts the member's learned weight for c.
	VoteWeighted
	// VoteSoft is plain soft voting: the class with the largest summed probability wins.
	VoteSoft
	// VoteWeightedSoft is class-weighted soft voting, this repository's extension of §4.1.1 to
	// probability outputs: member m adds w(m, c)·p_m(c) to every class c, where w is the same
	// learned per-model, per-class weight as VoteWeighted's. A member that is confidently right
	// on a class it predicts reliably outweighs two hesitant ones, and a member's runner-up
	// probability still counts (which top-1 votes throw away).
	VoteWeightedSoft
)

// Votings lists every scheme, in the order reports show them.
var Votings = []Voting{VoteMajority, VoteWeighted, VoteSoft, VoteWeightedSoft}

// String names the scheme.
func (v Voting) String() string {
	switch v {
	case VoteMajority:
		return "majority"
	case VoteWeighted:
		return "weighted-majority"
	case VoteSoft:
		return "soft"
	case VoteWeightedSoft:
		return "weighted-soft"
	}
	return fmt.Sprintf("Voting(%d)", int(v))
}

// Soft reports whether the scheme needs class probabilities.
func (v Voting) Soft() bool { return v == VoteSoft || v == VoteWeightedSoft }

// Weighted reports whether the scheme uses learned class weights.
func (v Voting) Weighted() bool { return v == VoteWeighted || v == VoteWeightedSoft }

// Tally accumulates one request's votes member by member, so a caller can stop querying
// members as soon as the outcome is decided (Decided). Its verdicts for the two majority schemes
// equal Majority's and ClassWeights.Weighted's on the same predictions in the same order,
// including tie-breaking. A Tally is reused across requests with Reset; it belongs to one
// goroutine, and weights may be nil for the unweighted schemes.
type Tally struct {
	voting  Voting
	weights *ClassWeights
	score   []float64 // per class: summed (weighted) votes or probabilities
	votes   []int     // per class: top-1 votes
	first   []int     // per class: index of its first top-1 vote (or first positive score), -1 if none
	touched []int     // classes with a non-zero entry, in order of first touch
	n       int       // members added
}

// NewTally returns an empty tally for scheme v; weights is needed by the weighted schemes.
func NewTally(v Voting, weights *ClassWeights) (*Tally, error) {
	if v < VoteMajority || v > VoteWeightedSoft {
		return nil, fmt.Errorf("tally: unknown voting %d", int(v))
	}
	if v.Weighted() && weights == nil {
		return nil, fmt.Errorf("tally %s: needs class weights", v)
	}
	return &Tally{voting: v, weights: weights}, nil
}

// Reset empties the tally for the next request.
func (t *Tally) Reset() {
	for _, c := range t.touched {
		t.score[c], t.votes[c], t.first[c] = 0, 0, -1
	}
	t.touched = t.touched[:0]
	t.n = 0
}

func (t *Tally) grow(c int) {
	for len(t.score) <= c {
		t.score = append(t.score, 0)
		t.votes = append(t.votes, 0)
		t.first = append(t.first, -1)
	}
}

func (t *Tally) touch(c int) {
	if t.first[c] < 0 {
		t.first[c] = t.n
		t.touched = append(t.touched, c)
	}
}

// Add counts member model's answer: its top-1 class and, for the soft schemes, its class
// probabilities (probs[c] for class c; ignored by the majority schemes).
func (t *Tally) Add(model string, class int, probs []float32) error {
	if class < 0 {
		return fmt.Errorf("tally: model %q answered class %d", model, class)
	}
	if t.voting.Soft() && len(probs) <= class {
		return fmt.Errorf("tally %s: model %q gave %d probabilities for top-1 class %d", t.voting, model, len(probs), class)
	}
	t.grow(max(class, len(probs)-1))
	t.touch(class)
	t.votes[class]++
	switch t.voting {
	case VoteMajority:
		t.score[class]++
	case VoteWeighted:
		t.score[class] += t.weights.Weight(model, class)
	case VoteSoft, VoteWeightedSoft:
		for c, p := range probs {
			if p <= 0 {
				continue
			}
			w := 1.0
			if t.voting == VoteWeightedSoft {
				w = t.weights.Weight(model, c)
			}
			t.touch(c)
			t.score[c] += w * float64(p)
		}
	}
	t.n++
	return nil
}

// Reach is the most one answer of model can add to a single class's score under the scheme:
// 1 for the unweighted schemes (one vote, or probabilities that sum to 1), the model's largest
// class weight for the weighted ones.
func (t *Tally) Reach(model string) float64 {
	if !t.voting.Weighted() {
		return 1
	}
	c, ok := t.weights.models[model]
	if !ok {
		return t.weights.Weight(model, 0)
	}
	best := 0.0
	for class := range c.predicted {
		best = max(best, t.weights.Weight(model, class))
	}
	for class := range c.seen {
		best = max(best, t.weights.Weight(model, class))
	}
	// A class the model has never predicted or seen weighs the smoothed base.
	return max(best, t.weights.Weight(model, -1))
}

// Verdict returns the current outcome. The heaviest class wins; exact score ties go to the
// class with more top-1 votes, then to the class voted (or, for soft schemes, scored) first —
// for the majority schemes exactly Majority's and ClassWeights.Weighted's rules. Votes is the
// winner's top-1 votes and Tie whether the top-1 vote count is shared. With no member added it
// returns Class -1.
func (t *Tally) Verdict() Verdict {
	v := Verdict{Class: -1}
	if t.n == 0 {
		return v
	}
	best := -1
	for _, c := range t.touched {
		if best < 0 || t.better(c, best) {
			best = c
		}
	}
	v = Verdict{Class: best, Votes: t.votes[best], Weight: t.score[best]}
	top, n := 0, 0
	for _, c := range t.touched {
		switch k := t.votes[c]; {
		case k > top:
			top, n = k, 1
		case k == top && k > 0:
			n++
		}
	}
	v.Tie = n > 1
	return v
}

// better reports whether class a beats class b.
func (t *Tally) better(a, b int) bool {
	switch {
	case t.score[a] != t.score[b]:
		return t.score[a] > t.score[b]
	case t.votes[a] != t.votes[b]:
		return t.votes[a] > t.votes[b]
	}
	return t.first[a] < t.first[b]
}

// Decided reports whether members that can add at most reach in total to any one class can no
// longer change the winner: the leader's score exceeds every other class's by more than reach
// (strictly, so no tie-break can flip it either). With reach = the unqueried members' summed
// Reach the verdict is final; a smaller reach bets that they will not all back the runner-up.
func (t *Tally) Decided(reach float64) bool {
	v := t.Verdict()
	if v.Class < 0 {
		return false
	}
	second := 0.0 // a class nobody has scored yet
	for _, c := range t.touched {
		if c != v.Class {
			second = max(second, t.score[c])
		}
	}
	return v.Weight-second > reach
}

// Members returns how many answers were added since the last Reset.
func (t *Tally) Members() int { return t.n }
