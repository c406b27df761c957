package ensemble

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func mustTally(t *testing.T, v Voting, w *ClassWeights) *Tally {
	t.Helper()
	tl, err := NewTally(v, w)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestTallyMatchesMajorityAndWeighted checks that the incremental tally gives exactly the verdicts
// of Majority and ClassWeights.Weighted (class, votes, weight, tie) on random predictions with
// many ties, so serve's switch to Tally changes no simulated number.
func TestTallyMatchesMajorityAndWeighted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	w := NewClassWeights(Precision, 0)
	models := []string{"a", "b", "c", "d", "e"}
	for _, m := range models {
		w.SetPrior(m, 0.6+0.05*rng.Float64())
	}
	maj, wt := mustTally(t, VoteMajority, nil), mustTally(t, VoteWeighted, w)
	for i := range 3000 {
		k := 1 + rng.IntN(len(models))
		preds := make([]Prediction, k)
		for j := range preds {
			preds[j] = Prediction{Model: models[rng.IntN(len(models))], Class: rng.IntN(4)}
		}
		maj.Reset()
		wt.Reset()
		for _, p := range preds {
			if err := maj.Add(p.Model, p.Class, nil); err != nil {
				t.Fatal(err)
			}
			if err := wt.Add(p.Model, p.Class, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := maj.Verdict(), Majority(preds); got != want {
			t.Fatalf("request %d %v: majority tally (-want +got):\n-%+v\n+%+v", i, preds, want, got)
		}
		if got, want := wt.Verdict(), w.Weighted(preds); got != want {
			t.Fatalf("request %d %v: weighted tally (-want +got):\n-%+v\n+%+v", i, preds, want, got)
		}
		if i%3 == 0 { // learn from some, so weights drift apart per class
			w.Learn(preds, rng.IntN(4))
		}
	}
}

func TestTallySoft(t *testing.T) {
	w := trained(t, Precision) // "good" reliable on classes 1 and 2, "bad"/"bad2" never right
	type ans struct {
		model string
		probs []float32
	}
	p := func(model string, probs ...float32) ans { return ans{model, probs} }
	tests := []struct {
		name  string
		v     Voting
		ans   []ans
		class int
		votes int
		tie   bool
	}{
		{"soft: one confident vote beats two hesitant ones", VoteSoft,
			[]ans{p("a", 0, 0.95, 0.05), p("b", 0, 0.45, 0.55), p("c", 0, 0.45, 0.55)}, 1, 1, false},
		{"majority of the same answers picks the hesitant pair", VoteMajority,
			[]ans{p("a", 0, 0.95, 0.05), p("b", 0, 0.45, 0.55), p("c", 0, 0.45, 0.55)}, 2, 2, false},
		{"soft: runner-up mass counts", VoteSoft,
			[]ans{p("a", 0.5, 0.4, 0.1), p("b", 0.1, 0.4, 0.5)}, 1, 0, true},
		{"weighted soft: the reliable model outweighs two confident unreliable ones", VoteWeightedSoft,
			[]ans{p("good", 0, 0.9, 0.1, 0), p("bad", 0, 0, 0.1, 0.9), p("bad2", 0, 0, 0.1, 0.9)}, 1, 1, false},
		{"plain soft of the same answers follows the unreliable pair", VoteSoft,
			[]ans{p("good", 0, 0.9, 0.1, 0), p("bad", 0, 0, 0.1, 0.9), p("bad2", 0, 0, 0.1, 0.9)}, 3, 2, false},
		{"exact tie goes to the class scored first", VoteSoft,
			[]ans{p("a", 0.5, 0.5), p("b", 0.5, 0.5)}, 0, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := mustTally(t, tt.v, w)
			for _, a := range tt.ans {
				if err := tl.Add(a.model, argmaxF(a.probs), a.probs); err != nil {
					t.Fatal(err)
				}
			}
			got := tl.Verdict()
			if got.Class != tt.class || got.Votes != tt.votes || got.Tie != tt.tie {
				t.Errorf("verdict (-want +got):\n-class %d votes %d tie %v\n+%+v", tt.class, tt.votes, tt.tie, got)
			}
			if tl.Members() != len(tt.ans) {
				t.Errorf("members %d, want %d", tl.Members(), len(tt.ans))
			}
		})
	}
}

func argmaxF(row []float32) int {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return best
}

func TestTallyDecided(t *testing.T) {
	tests := []struct {
		name  string
		v     Voting
		votes []int // top-1 classes (majority) added in order
		probs [][]float32
		reach float64
		want  bool
	}{
		{"empty is never decided", VoteMajority, nil, nil, 0, false},
		{"3–0 with 2 left is decided", VoteMajority, []int{1, 1, 1}, nil, 2, true},
		{"3–0 with 3 left could tie: not decided", VoteMajority, []int{1, 1, 1}, nil, 3, false},
		{"2–1 with 1 left could tie: not decided", VoteMajority, []int{1, 2, 1}, nil, 1, false},
		{"2–1 with nothing left is decided", VoteMajority, []int{1, 2, 1}, nil, 0, true},
		{"a tie with nothing left is not decided (margin 0)", VoteMajority, []int{1, 2}, nil, 0, false},
		{"soft margin 1.8 beats reach 1.5", VoteSoft, nil, [][]float32{{0.05, 0.95}, {0.05, 0.95}}, 1.5, true},
		{"soft margin 0.9 loses to reach 1", VoteSoft, nil, [][]float32{{0.05, 0.95}}, 1, false},
		{"soft margin is to the runner-up, not to unscored classes", VoteSoft, nil, [][]float32{{0, 0.7, 0.3}}, 0.5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := mustTally(t, tt.v, nil)
			for i, c := range tt.votes {
				if err := tl.Add(fmt.Sprint("m", i), c, nil); err != nil {
					t.Fatal(err)
				}
			}
			for i, p := range tt.probs {
				if err := tl.Add(fmt.Sprint("m", i), argmaxF(p), p); err != nil {
					t.Fatal(err)
				}
			}
			if got := tl.Decided(tt.reach); got != tt.want {
				t.Errorf("Decided(%v) (-want +got):\n-%v\n+%v (verdict %+v)", tt.reach, tt.want, got, tl.Verdict())
			}
		})
	}
}

func TestTallyReach(t *testing.T) {
	w := trained(t, Precision)
	w.SetPrior("new", 0.7)
	if got := mustTally(t, VoteSoft, nil).Reach("good"); got != 1 {
		t.Errorf("unweighted reach (-want +got):\n-1\n+%v", got)
	}
	wt := mustTally(t, VoteWeightedSoft, w)
	good := wt.Reach("good")
	if want := max(w.Weight("good", 1), w.Weight("good", 2)); good != want || good <= 0.9 {
		t.Errorf("reach of good (-want +got):\n-%v (its best class weight, > 0.9)\n+%v", want, good)
	}
	if got := wt.Reach("new"); got != 0.7 {
		t.Errorf("reach of a model without feedback (-want +got):\n-0.7 (its prior)\n+%v", got)
	}
	if got, bad := wt.Reach("bad"), w.Weight("bad", 2); got < bad {
		t.Errorf("reach of bad %v below one of its class weights %v", got, bad)
	}
}

func TestTallyRejects(t *testing.T) {
	if _, err := NewTally(VoteWeighted, nil); err == nil {
		t.Error("weighted tally without weights accepted")
	}
	if _, err := NewTally(Voting(9), nil); err == nil {
		t.Error("unknown voting accepted")
	}
	soft := mustTally(t, VoteSoft, nil)
	if err := soft.Add("m", 2, []float32{0.5, 0.5}); err == nil {
		t.Error("soft vote without a probability for its top-1 class accepted")
	}
	if err := soft.Add("m", -1, nil); err == nil {
		t.Error("negative class accepted")
	}
	if Voting(9).String() != "Voting(9)" || VoteWeightedSoft.String() != "weighted-soft" {
		t.Error("Voting.String")
	}
}
