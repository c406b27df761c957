package measure

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/models"
)

// echo is a fake classifier: it scores class = round(first input value) highest, and takes
// `cost` of fake time per call.
type echo struct {
	clock *fakeClock
	cost  time.Duration
	fail  bool
}

func (e *echo) Run(_ context.Context, in []models.Tensor) ([]models.Tensor, error) {
	if e.fail {
		return nil, errors.New("boom")
	}
	b, dim := int(in[0].Shape[0]), int(in[0].Shape[1])
	out := models.Tensor{Shape: []int64{int64(b), 3}, Data: make([]float32, 3*b)}
	for i := range b {
		out.Data[i*3+int(in[0].Data[i*dim])] = 1
	}
	e.clock.t = e.clock.t.Add(e.cost)
	return []models.Tensor{out}, nil
}

type fakeClock struct{ t time.Time }

func (f *fakeClock) now() time.Time { return f.t }

func TestCollect(t *testing.T) {
	clk := &fakeClock{}
	s := Sample{X: []float32{0, 9, 1, 9, 2, 9, 1, 9}, Dim: 2, Labels: []int{0, 1, 2, 2}}
	cls := []Classifier{{Name: "fast", Runner: &echo{clock: clk, cost: time.Millisecond}}, {Name: "slow", Runner: &echo{clock: clk, cost: 4 * time.Millisecond}}}
	a, err := Collect(context.Background(), cls, s, Options{Batch: 3, LatencyRuns: 5, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []int{0, 1, 2, 1}
	for m := range a.Pred {
		for i, p := range a.Pred[m] {
			if p != want[i] {
				t.Fatalf("model %d predictions (-want +got):\n-%v\n+%v", m, want, a.Pred[m])
			}
		}
	}
	if a.Models[0].Latency != time.Millisecond || a.Models[1].Latency != 4*time.Millisecond {
		t.Errorf("latencies (-want +got):\n-1ms 4ms\n+%v %v", a.Models[0].Latency, a.Models[1].Latency)
	}
	if a.Models[0].PackingFactor != 4 || a.Models[1].PackingFactor != 1 || a.Models[0].Accuracy != 0.75 {
		t.Errorf("model 0: %+v, model 1: %+v", a.Models[0], a.Models[1])
	}
}

func TestCollectErrors(t *testing.T) {
	clk := &fakeClock{}
	s := Sample{X: []float32{0, 1}, Dim: 1, Labels: []int{0, 1}}
	if _, err := Collect(context.Background(), nil, s, DefaultOptions()); err == nil {
		t.Error("accepted no classifiers")
	}
	bad := []Classifier{{Name: "x", Runner: &echo{clock: clk, fail: true}}}
	if _, err := Collect(context.Background(), bad, s, DefaultOptions()); err == nil {
		t.Error("hid a runner error")
	}
	ok := []Classifier{{Name: "x", Runner: &echo{clock: clk}}}
	if _, err := Collect(context.Background(), ok, Sample{X: []float32{1}, Dim: 2, Labels: []int{0}}, DefaultOptions()); err == nil {
		t.Error("accepted a ragged sample")
	}
}
