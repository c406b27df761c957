package ensemble

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// synthAnswers builds answers for three fast 80 %-accurate models with independent errors and
// one slow 85 % model, over n images of 10 classes, with class probabilities: a model puts
// 0.4–1 on its top-1 class and spreads the rest over two other classes.
func synthAnswers(n int) Answers { return synthAnswersSeed(n, 4) }

// synthAnswersSeed is synthAnswers from another random stream (validation answers of the same
// models).
func synthAnswersSeed(n int, seed uint64) Answers {
	rng := rand.New(rand.NewPCG(3, seed))
	a := Answers{Models: []Model{
		{Name: "f1", Latency: time.Millisecond, Accuracy: 0.8, PackingFactor: 4},
		{Name: "f2", Latency: time.Millisecond, Accuracy: 0.8, PackingFactor: 4},
		{Name: "f3", Latency: 2 * time.Millisecond, Accuracy: 0.8, PackingFactor: 2},
		{Name: "big", Latency: 4 * time.Millisecond, Accuracy: 0.85, PackingFactor: 1},
	}, Classes: 10}
	acc := []float64{0.8, 0.8, 0.8, 0.85}
	a.Pred = make([][]int, len(acc))
	a.Prob = make([][]float32, len(acc))
	for range n {
		label := rng.IntN(10)
		a.Labels = append(a.Labels, label)
		for m := range acc {
			p := label
			if rng.Float64() >= acc[m] {
				p = (label + 1 + rng.IntN(9)) % 10
			}
			a.Pred[m] = append(a.Pred[m], p)
			row := make([]float32, 10)
			top := 0.4 + 0.6*rng.Float64()
			row[p] = float32(top)
			other := (p + 1 + rng.IntN(9)) % 10
			if p != label && rng.IntN(2) == 0 {
				other = label // a wrong model often has the truth as runner-up
			}
			row[other] += float32((1 - top) * 0.7)
			row[(other+1+rng.IntN(8))%10] += float32((1 - top) * 0.3)
			if argmaxF(row) != p { // keep the top-1 class on top
				row[p], row[argmaxF(row)] = row[argmaxF(row)], row[p]
			}
			a.Prob[m] = append(a.Prob[m], row...)
		}
	}
	return a
}

func vote(t *testing.T, rep EvalReport, ens string, v Voting) EvalVoting {
	t.Helper()
	e, ok := rep.Ensemble(ens)
	if !ok {
		t.Fatalf("no %q ensemble in %+v", ens, rep.Ensembles)
	}
	r, ok := e.Vote(v)
	if !ok {
		t.Fatalf("%s: no %s vote in %+v", ens, v, e.Votes)
	}
	return r
}

func TestEvaluate(t *testing.T) {
	a := synthAnswers(1000)
	val := synthAnswersSeed(2000, 5)
	c, base, err := val.Baseline("")
	if err != nil {
		t.Fatal(err)
	}
	if base != "big" {
		t.Fatalf("baseline (-want +got):\n-big\n+%s", base)
	}
	ecfg := DefaultConfig()
	ecfg.LatencyMargin = 0
	cfg := EvalConfig{Passes: 10, Rate: 50, Seed: 1, EarlyExit: 0.5}
	rep, err := Evaluate(val, a, c, ecfg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range rep.Ensembles {
		names = append(names, e.Name)
		if len(e.Votes) != len(Votings) {
			t.Errorf("%s: %d votes, want one per scheme (%d)", e.Name, len(e.Votes), len(Votings))
		}
	}
	full, _ := rep.Ensemble(EvalFull)
	static, _ := rep.Ensemble(EvalStatic)
	if rep.Requests != 10000 || len(rep.Single) != 4 || len(full.Models) != 3 || len(static.Models) != 1 ||
		fmt.Sprint(names) != "[full static dynamic early-exit-exact early-exit select dynamic-select]" {
		t.Fatalf("report shape: requests %d singles %d full %v static %v ensembles %v", rep.Requests, len(rep.Single), full.Models, static.Models, names)
	}
	bigAcc, bigLat := rep.Single[3].Accuracy, rep.Single[3].LatencyMS
	for _, v := range Votings {
		f := vote(t, rep, EvalFull, v)
		if f.Accuracy <= bigAcc || f.LatencyMS >= bigLat || f.MeanModels != 3 {
			t.Errorf("%s: three independent 80%% models should beat the 85%% model faster: full %.4f at %.1f ms with %.2f models vs %.4f at %.1f ms",
				v, f.Accuracy, f.LatencyMS, f.MeanModels, bigAcc, bigLat)
		}
		if s := vote(t, rep, EvalStatic, v); s.MeanModels != 1 {
			t.Errorf("%s: static mean models %v, want 1", v, s.MeanModels)
		}
		if d := vote(t, rep, EvalDynamic, v); d.MeanModels > 3 {
			t.Errorf("%s: dynamic mean models %v > 3", v, d.MeanModels)
		}
		exact, loose := vote(t, rep, EvalExitExact, v), vote(t, rep, EvalExit, v)
		if !(exact.MeanModels < 3 && loose.MeanModels <= exact.MeanModels && loose.MeanModels >= 2) {
			t.Errorf("%s: early exit mean models exact %.3f, slack 0.5 %.3f; want slack ≤ exact < 3 and ≥ 2 (2 of 3 must agree)", v, exact.MeanModels, loose.MeanModels)
		}
		// Unweighted votes are the same function of the same answers whether or not the exit
		// stopped early: the exact early exit must score exactly the full ensemble's accuracy.
		if !v.Weighted() && exact.Accuracy != f.Accuracy {
			t.Errorf("%s: exact early exit accuracy %.4f, full %.4f: must be equal", v, exact.Accuracy, f.Accuracy)
		}
		if v.Weighted() && math.Abs(exact.Accuracy-f.Accuracy) > 0.005 {
			t.Errorf("%s: exact early exit accuracy %.4f vs full %.4f: only the weights' feedback differs", v, exact.Accuracy, f.Accuracy)
		}
	}
	if s, m := vote(t, rep, EvalFull, VoteSoft), vote(t, rep, EvalFull, VoteMajority); s.Accuracy <= m.Accuracy {
		t.Errorf("soft voting %.4f should beat majority %.4f when wrong models rank the truth second", s.Accuracy, m.Accuracy)
	}
	again, _ := Evaluate(val, a, c, ecfg, cfg)
	if fmt.Sprint(again.Ensembles) != fmt.Sprint(rep.Ensembles) {
		t.Errorf("Evaluate is not deterministic: %+v then %+v", rep.Ensembles, again.Ensembles)
	}
	hard, hval := a, val
	hard.Prob, hard.Classes = nil, 0
	hval.Prob, hval.Classes = nil, 0
	hrep, err := Evaluate(hval, hard, c, ecfg, DefaultEvalConfig())
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := hrep.Ensemble(EvalFull); len(e.Votes) != 2 {
		t.Errorf("without probabilities want the two majority schemes, got %+v", e.Votes)
	}
}

func TestEvaluateRejectsBadInput(t *testing.T) {
	a := synthAnswers(10)
	c := Constraint{time.Second, 0.5}
	bad := a
	bad.Pred = bad.Pred[:2]
	if _, err := Evaluate(a, bad, c, DefaultConfig(), DefaultEvalConfig()); err == nil {
		t.Error("accepted a missing prediction row")
	}
	if _, err := Evaluate(a, a, c, DefaultConfig(), EvalConfig{Passes: 0, Rate: 1, EarlyExit: 0.5}); err == nil {
		t.Error("accepted zero passes")
	}
	if _, err := Evaluate(a, a, c, DefaultConfig(), EvalConfig{Passes: 1, Rate: 1, EarlyExit: 1}); err == nil {
		t.Error("accepted an early-exit slack of 1 (the exact exit is always reported)")
	}
	ragged := a
	ragged.Prob = [][]float32{a.Prob[0], a.Prob[1], a.Prob[2], a.Prob[3][:5]}
	if _, err := Evaluate(a, ragged, c, DefaultConfig(), DefaultEvalConfig()); err == nil {
		t.Error("accepted a short probability row")
	}
	short := synthAnswersSeed(10, 9)
	short.Models = short.Models[:3]
	short.Pred, short.Prob = short.Pred[:3], short.Prob[:3]
	if _, err := Evaluate(short, a, c, DefaultConfig(), DefaultEvalConfig()); err == nil {
		t.Error("accepted validation answers of other models")
	}
	if _, _, err := a.Baseline("nope"); err == nil {
		t.Error("accepted an unknown baseline")
	}
	tight := DefaultConfig()
	tight.LatencyMargin = 0
	if _, err := Evaluate(a, a, Constraint{time.Microsecond, 0.5}, tight, DefaultEvalConfig()); err == nil {
		t.Error("accepted a constraint no model meets")
	}
}

// TestEvaluateChoosesOnValidation: accuracies, rankings, static membership and the baseline
// come from the validation answers, and the default run scores each test answer once (issue
// #18, item 14: they all came from the scored test set, replayed 30 times).
func TestEvaluateChoosesOnValidation(t *testing.T) {
	test := synthAnswers(500)
	val := synthAnswersSeed(800, 6)
	// In validation f3 is the best fast model; in test f1 is (its answers are made perfect).
	copy(val.Pred[2], val.Labels)
	copy(test.Pred[0], test.Labels)
	c, base, err := val.Baseline("big")
	if err != nil {
		t.Fatal(err)
	}
	ecfg := DefaultConfig()
	ecfg.LatencyMargin = 0
	rep, err := Evaluate(val, test, c, ecfg, DefaultEvalConfig())
	if err != nil {
		t.Fatal(err)
	}
	static, _ := rep.Ensemble(EvalStatic)
	full, _ := rep.Ensemble(EvalFull)
	if base != "big" || fmt.Sprint(static.Models) != "[f3]" || full.Models[0] != "f3" {
		t.Errorf("choices (-want +got):\n-static [f3], full led by f3\n+static %v, full %v", static.Models, full.Models)
	}
	if rep.Requests != len(test.Labels) || rep.ValidationImages != len(val.Labels) {
		t.Errorf("requests %d of %d test answers, validation %d of %d: want one pass", rep.Requests, len(test.Labels), rep.ValidationImages, len(val.Labels))
	}
	if s := rep.Single[2]; s.ValidationAccuracy != 1 || s.Accuracy == 1 {
		t.Errorf("f3 single (-want +got):\n-validation 1, test < 1\n+validation %v, test %v", s.ValidationAccuracy, s.Accuracy)
	}
	if s := vote(t, rep, EvalStatic, VoteMajority); s.Accuracy != rep.Single[2].Accuracy {
		t.Errorf("static [f3] accuracy %v, want f3's test accuracy %v", s.Accuracy, rep.Single[2].Accuracy)
	}
}
