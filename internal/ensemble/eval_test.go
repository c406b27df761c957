package ensemble

import (
	"math/rand/v2"
	"testing"
	"time"
)

// synthAnswers builds answers for three fast 80 %-accurate models with independent errors and
// one slow 85 % model, over n images of 10 classes.
func synthAnswers(n int) Answers {
	rng := rand.New(rand.NewPCG(3, 4))
	a := Answers{Models: []Model{
		{Name: "f1", Latency: time.Millisecond, Accuracy: 0.8, PackingFactor: 4},
		{Name: "f2", Latency: time.Millisecond, Accuracy: 0.8, PackingFactor: 4},
		{Name: "f3", Latency: 2 * time.Millisecond, Accuracy: 0.8, PackingFactor: 2},
		{Name: "big", Latency: 4 * time.Millisecond, Accuracy: 0.85, PackingFactor: 1},
	}}
	acc := []float64{0.8, 0.8, 0.8, 0.85}
	a.Pred = make([][]int, len(acc))
	for range n {
		label := rng.IntN(10)
		a.Labels = append(a.Labels, label)
		for m := range acc {
			p := label
			if rng.Float64() >= acc[m] {
				p = (label + 1 + rng.IntN(9)) % 10
			}
			a.Pred[m] = append(a.Pred[m], p)
		}
	}
	return a
}

func TestEvaluate(t *testing.T) {
	a := synthAnswers(1000)
	c, base, err := a.Baseline("")
	if err != nil {
		t.Fatal(err)
	}
	if base != "big" {
		t.Fatalf("baseline (-want +got):\n-big\n+%s", base)
	}
	ecfg := DefaultConfig()
	ecfg.LatencyMargin = 0
	rep, err := Evaluate(a, c, ecfg, EvalConfig{Passes: 10, Rate: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 10000 || len(rep.Single) != 4 || len(rep.Full.Models) != 3 || len(rep.Static.Models) != 1 {
		t.Fatalf("report shape: requests %d singles %d full %v static %v", rep.Requests, len(rep.Single), rep.Full.Models, rep.Static.Models)
	}
	bigAcc := rep.Single[3].Accuracy
	if rep.Full.Accuracy <= bigAcc || rep.Full.LatencyMS >= rep.Single[3].LatencyMS {
		t.Errorf("three independent 80%% models should beat the 85%% model faster: full %.4f at %.1f ms vs %.4f at %.1f ms",
			rep.Full.Accuracy, rep.Full.LatencyMS, bigAcc, rep.Single[3].LatencyMS)
	}
	if rep.Full.MeanModels != 3 || rep.Static.MeanModels != 1 || rep.Dynamic.MeanModels > 3 {
		t.Errorf("mean models: full %v static %v dynamic %v", rep.Full.MeanModels, rep.Static.MeanModels, rep.Dynamic.MeanModels)
	}
	again, _ := Evaluate(a, c, ecfg, EvalConfig{Passes: 10, Rate: 50, Seed: 1})
	if again.Dynamic.EvalVoting != rep.Dynamic.EvalVoting || again.Dynamic.Plain != rep.Dynamic.Plain {
		t.Errorf("Evaluate is not deterministic: %+v then %+v", rep.Dynamic, again.Dynamic)
	}
	cross, err := Evaluate(a, c, ecfg, EvalConfig{Passes: 10, Rate: 50, Seed: 1, CrossFit: true})
	if err != nil {
		t.Fatal(err)
	}
	if cross.Requests != 10000 || cross.Full.MeanModels != 3 {
		t.Errorf("cross-fitted report: requests %d, full mean models %v", cross.Requests, cross.Full.MeanModels)
	}
}

func TestEvaluateRejectsBadInput(t *testing.T) {
	a := synthAnswers(10)
	c := Constraint{time.Second, 0.5}
	bad := a
	bad.Pred = bad.Pred[:2]
	if _, err := Evaluate(bad, c, DefaultConfig(), DefaultEvalConfig()); err == nil {
		t.Error("accepted a missing prediction row")
	}
	if _, err := Evaluate(a, c, DefaultConfig(), EvalConfig{Passes: 0, Rate: 1}); err == nil {
		t.Error("accepted zero passes")
	}
	if _, _, err := a.Baseline("nope"); err == nil {
		t.Error("accepted an unknown baseline")
	}
	tight := DefaultConfig()
	tight.LatencyMargin = 0
	if _, err := Evaluate(a, Constraint{time.Microsecond, 0.5}, tight, DefaultEvalConfig()); err == nil {
		t.Error("accepted a constraint no model meets")
	}
}
