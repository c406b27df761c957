package forecast

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func smallLSTMConfig() LSTMConfig {
	c := DefaultLSTMConfig()
	c.Hidden, c.Lags, c.Horizon, c.Window = 8, 12, 10, 200
	return c
}

func sineSeries(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 100 + 40*math.Sin(2*math.Pi*float64(i)/48)
	}
	return s
}

// TestLSTMModelRoundTrip: a model trained offline, written and read back, forecasts exactly as
// the net that was trained, and starts trained (no fallback to the last value).
func TestLSTMModelRoundTrip(t *testing.T) {
	series := sineSeries(600)
	m, err := TrainLSTM(series[:500], smallLSTMConfig(), 300)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteLSTMModel(&buf, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLSTMModel(&buf)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewLSTMFromModel(m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New("lstm", Options{Horizon: 60, Season: 2, LSTM: &got})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range series[500:550] {
		a.Observe(v)
		b.Observe(v)
	}
	fa, fb := a.Forecast(10), b.Forecast(10)
	if !slices.Equal(fa, fb) {
		t.Errorf("forecast after the round trip (-want +got):\n-%v\n+%v", fa, fb)
	}
	if a.Trained() != 300 {
		t.Errorf("Trained() = %d, want 300", a.Trained())
	}
	if flat := fa[0] == fa[9]; flat {
		t.Errorf("forecast %v is flat: the loaded net was not used", fa)
	}
	// Better than the last value on the held-out sine.
	var seLSTM, seNaive float64
	for k, v := range fa {
		actual := series[550+k]
		seLSTM += (v - actual) * (v - actual)
		seNaive += (series[549] - actual) * (series[549] - actual)
	}
	if seLSTM >= seNaive {
		t.Errorf("pre-trained LSTM squared error %.1f, last value %.1f: want the trained net better", seLSTM, seNaive)
	}
}

func TestLSTMModelValidate(t *testing.T) {
	good, err := TrainLSTM(sineSeries(200), smallLSTMConfig(), 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mut  func(*LSTMModel)
		want string
	}{
		{"format", func(m *LSTMModel) { m.Format = "keras" }, "format"},
		{"config", func(m *LSTMModel) { m.Config.Hidden = 0 }, "lstm.hidden"},
		{"param count", func(m *LSTMModel) { m.Params = m.Params[1:] }, "params"},
		{"nan", func(m *LSTMModel) { m.Params = slices.Clone(m.Params); m.Params[3] = math.NaN() }, "non-finite"},
		{"scale", func(m *LSTMModel) { m.DScale = 0 }, "scales"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good
			tc.mut(&m)
			err := m.Validate()
			if !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want ErrBadModel naming %q", err, tc.want)
			}
		})
	}
	if _, err := TrainLSTM(sineSeries(20), smallLSTMConfig(), 5); err == nil {
		t.Error("TrainLSTM on 20 units: want an error (needs lags+horizon+1)")
	}
}

func FuzzReadLSTMModel(f *testing.F) {
	m, err := TrainLSTM(sineSeries(200), smallLSTMConfig(), 2)
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteLSTMModel(&buf, m); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"sloserve-lstm/v1"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ReadLSTMModel(bytes.NewReader(b))
		if err != nil {
			return
		}
		l, err := NewLSTMFromModel(m)
		if err != nil {
			t.Fatalf("read a model NewLSTMFromModel rejects: %v", err)
		}
		l.Observe(1)
		_ = l.Forecast(3)
	})
}
