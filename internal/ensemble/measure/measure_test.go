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
	a, err := Collect(context.Background(), cls, s, Options{Batch: 3, LatencyRuns: 5, LatencyBatch: 8, Clock: clk.now})
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
	// The batched latency is measured at min(8, sample size) = 4 images per run.
	if a.Batch != 4 || len(a.BatchLatency) != 2 || a.BatchLatency[0] != time.Millisecond || a.BatchLatency[1] != 4*time.Millisecond {
		t.Errorf("batch latency (-want +got):\n-batch 4: 1ms 4ms\n+batch %d: %v", a.Batch, a.BatchLatency)
	}
	// echo outputs one-hot rows: kept as they are, one row of 3 per image.
	if a.Classes != 3 || len(a.Prob[0]) != 12 || a.Prob[0][3*1+1] != 1 || a.Prob[0][3*3+1] != 1 {
		t.Errorf("probabilities: classes %d, model 0 %v", a.Classes, a.Prob[0])
	}
}

func TestProbabilities(t *testing.T) {
	if got := probabilities([]float32{0.25, 0.75}); got[0] != 0.25 || got[1] != 0.75 {
		t.Errorf("a distribution must be kept, got %v", got)
	}
	got := probabilities([]float32{2, 0, -1}) // logits: softmax
	var sum float32
	for _, v := range got {
		sum += v
	}
	if !(got[0] > got[1] && got[1] > got[2] && got[2] > 0) || sum < 0.999 || sum > 1.001 {
		t.Errorf("softmax of logits: %v (sum %v)", got, sum)
	}
}

// TestLatenciesInterleaved checks that the latency runs go round-robin over the models: with a
// clock that slows down over time, two equally fast models must measure medians one step
// apart (measured one after the other, b's median would be 9 runs later than a's).
func TestLatenciesInterleaved(t *testing.T) {
	clk := &fakeClock{}
	slow := &drifting{clock: clk}
	s := Sample{X: []float32{0, 1, 2, 0}, Dim: 1, Labels: []int{0, 1, 2, 0}}
	cls := []Classifier{{Name: "a", Runner: slow}, {Name: "b", Runner: slow}}
	lat, err := latencies(context.Background(), cls, s, 1, 9, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	if d := lat[1] - lat[0]; d < 0 || d > time.Microsecond {
		t.Errorf("equal models measured %v and %v: runs are not interleaved", lat[0], lat[1])
	}
}

// drifting takes one more microsecond per call than the call before.
type drifting struct {
	clock *fakeClock
	calls int
}

func (d *drifting) Run(_ context.Context, in []models.Tensor) ([]models.Tensor, error) {
	d.calls++
	d.clock.t = d.clock.t.Add(time.Duration(d.calls) * time.Microsecond)
	b := int(in[0].Shape[0])
	return []models.Tensor{{Shape: []int64{int64(b), 3}, Data: make([]float32, 3*b)}}, nil
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
	if _, err := Collect(context.Background(), ok, s, Options{Batch: 1, LatencyRuns: 1, LatencyBatch: 1}); err == nil {
		t.Error("accepted a batched latency at batch 1")
	}
}
