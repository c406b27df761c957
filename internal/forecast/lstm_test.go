package forecast

import (
	"math"
	"testing"
)

// TestLSTMGradient compares backpropagation through time with central finite differences.
func TestLSTMGradient(t *testing.T) {
	c := LSTMConfig{Hidden: 4, Lags: 5, Horizon: 3, Batch: 1, LearningRate: 1e-3, Window: 100, Seed: 9}
	l, err := NewLSTM(c)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, 30)
	for i := range x {
		x[i] = 10 + 5*math.Sin(float64(i)/2) + float64(i%3)
	}
	l.refreshScales(x)
	const end = 12
	clear(l.grads)
	l.loss(x, end, 1)
	l.backward()
	analytic := append([]float64(nil), l.grads...)
	const h = 1e-6
	worst := 0.0
	for i := range l.params {
		orig := l.params[i]
		l.params[i] = orig + h
		up := l.loss(x, end, 1)
		l.params[i] = orig - h
		down := l.loss(x, end, 1)
		l.params[i] = orig
		num := (up - down) / (2 * h)
		diff := math.Abs(num-analytic[i]) / math.Max(1e-4, math.Abs(num)+math.Abs(analytic[i]))
		if diff > worst {
			worst = diff
		}
		if diff > 1e-4 {
			t.Errorf("param %d: analytic %.8g, numeric %.8g", i, analytic[i], num)
		}
	}
	t.Logf("worst relative gradient error %.2g over %d parameters", worst, len(l.params))
}

// TestLSTMLearnsSine trains a small net for a bounded number of steps and checks that it beats
// persistence on a periodic series it has seen.
func TestLSTMLearnsSine(t *testing.T) {
	c := DefaultLSTMConfig()
	c.Hidden, c.Lags, c.Horizon, c.Batch, c.Window, c.Seed = 8, 16, 12, 4, 1000, 5
	l, err := NewLSTM(c)
	if err != nil {
		t.Fatal(err)
	}
	series := seasonal(600, 40)
	for _, v := range series[:560] {
		l.Observe(v)
	}
	if got := l.Train(300); got != 300 {
		t.Fatalf("Train(300) ran %d steps", got)
	}
	if got := l.Trained(); got != 300 {
		t.Errorf("Trained() = %d, want 300", got)
	}
	pred := l.Forecast(12)
	var seL, seN float64
	last := series[559]
	for k, p := range pred {
		a := series[560+k]
		seL += (p - a) * (p - a)
		seN += (last - a) * (last - a)
	}
	if seL >= seN {
		t.Errorf("LSTM squared error %.1f, want below persistence %.1f", seL, seN)
	}
}

func TestLSTMTrainNeedsHistory(t *testing.T) {
	l, _ := NewLSTM(DefaultLSTMConfig())
	for range 10 {
		l.Observe(5)
	}
	if got := l.Train(10); got != 0 {
		t.Errorf("Train on 10 units ran %d steps, want 0", got)
	}
	if got := l.Forecast(3); !equal(got, []float64{5, 5, 5}) {
		t.Errorf("untrained Forecast = %v, want the last value", got)
	}
}

func BenchmarkLSTMTrainStep(b *testing.B) {
	l, _ := NewLSTM(DefaultLSTMConfig())
	for _, v := range seasonal(2000, 1440) {
		l.Observe(v)
	}
	b.ReportAllocs()
	for b.Loop() {
		l.Train(1)
	}
}
