package ensemble

import "testing"

func TestMajority(t *testing.T) {
	tests := []struct {
		name  string
		preds []Prediction
		want  Verdict
	}{
		{"no predictions", nil, Verdict{Class: -1}},
		{"clear majority", []Prediction{{"a", 1}, {"b", 1}, {"c", 2}}, Verdict{Class: 1, Votes: 2, Weight: 2}},
		{"tie goes to the earliest vote", []Prediction{{"a", 3}, {"b", 1}, {"c", 1}, {"d", 3}}, Verdict{Class: 3, Votes: 2, Weight: 2, Tie: true}},
		{"all disagree", []Prediction{{"a", 4}, {"b", 5}}, Verdict{Class: 4, Votes: 1, Weight: 1, Tie: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Majority(tt.preds); got != tt.want {
				t.Errorf("Majority (-want +got):\n-%+v\n+%+v", tt.want, got)
			}
		})
	}
}

// trained returns weights where model "good" was always right on class 1 and "bad" always
// predicted 2 when the truth was 1.
func trained(t *testing.T, mode WeightMode) *ClassWeights {
	t.Helper()
	w := NewClassWeights(mode, 0)
	for range 20 {
		w.Learn([]Prediction{{"good", 1}, {"bad", 2}, {"bad2", 2}}, 1)
		w.Learn([]Prediction{{"good", 2}, {"bad", 3}, {"bad2", 3}}, 2)
	}
	return w
}

func TestWeighted(t *testing.T) {
	w := trained(t, Precision)
	tests := []struct {
		name  string
		preds []Prediction
		class int
		tie   bool
	}{
		{"reliable minority beats unreliable majority", []Prediction{{"good", 1}, {"bad", 2}, {"bad2", 2}}, 1, false},
		{"vote tie broken by weight", []Prediction{{"good", 1}, {"bad", 2}}, 1, true},
		{"agreement wins", []Prediction{{"good", 2}, {"bad", 2}}, 2, false},
		{"no predictions", nil, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.Weighted(tt.preds)
			if got.Class != tt.class || got.Tie != tt.tie {
				t.Errorf("Weighted (-want +got):\n-class %d tie %v\n+class %d tie %v (%+v)", tt.class, tt.tie, got.Class, got.Tie, got)
			}
		})
	}
}

func TestWeightStartsAtPrior(t *testing.T) {
	w := NewClassWeights(Recall, 0)
	w.SetPrior("m", 0.8)
	if got := w.Weight("m", 42); got != 0.8 {
		t.Errorf("weight before feedback (-want +got):\n-0.8\n+%v", got)
	}
	if got := w.Weight("unknown", 42); got != 0.5 {
		t.Errorf("weight of an unknown model (-want +got):\n-0.5\n+%v", got)
	}
	w.Learn([]Prediction{{"m", 1}}, 1)
	if got := w.Weight("m", 1); got <= 0.8 {
		t.Errorf("a correct answer did not raise the class weight: %v", got)
	}
	if Precision.String() != "precision" || Recall.String() != "recall" || WeightMode(9).String() != "WeightMode(9)" {
		t.Error("WeightMode.String")
	}
}
