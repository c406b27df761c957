package forecast

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// conformance is the test every registered method passes.
func TestConformance(t *testing.T) {
	for _, name := range Methods() {
		t.Run(name, func(t *testing.T) {
			newF := func(t *testing.T) Forecaster {
				t.Helper()
				o := DefaultOptions()
				o.Horizon, o.Season = 12, 24
				f, err := New(name, o)
				if err != nil {
					t.Fatalf("New(%q): %v", name, err)
				}
				return f
			}
			t.Run("name", func(t *testing.T) {
				if got := newF(t).Name(); got != name {
					t.Errorf("Name() = %q, want %q", got, name)
				}
			})
			t.Run("empty history gives zeros", func(t *testing.T) {
				f := newF(t)
				got := f.Forecast(5)
				if len(got) != 5 {
					t.Fatalf("len(Forecast(5)) = %d, want 5", len(got))
				}
				for i, v := range got {
					if v != 0 {
						t.Errorf("Forecast(5)[%d] = %v, want 0", i, v)
					}
				}
				if got := f.Forecast(0); len(got) != 0 {
					t.Errorf("Forecast(0) = %v, want empty", got)
				}
			})
			t.Run("constant series", func(t *testing.T) {
				f := newF(t)
				for range 200 {
					f.Observe(42)
				}
				train(f, 20)
				for i, v := range f.Forecast(20) {
					if math.Abs(v-42) > 0.5 {
						t.Errorf("Forecast(20)[%d] = %v, want 42 ± 0.5", i, v)
					}
				}
			})
			t.Run("bad observations are clamped", func(t *testing.T) {
				f := newF(t)
				for i := range 100 {
					switch i % 4 {
					case 0:
						f.Observe(math.NaN())
					case 1:
						f.Observe(-5)
					case 2:
						f.Observe(math.Inf(1))
					default:
						f.Observe(float64(i))
					}
				}
				train(f, 20)
				for i, v := range f.Forecast(30) {
					if math.IsNaN(v) || v < 0 || math.IsInf(v, 0) {
						t.Errorf("Forecast(30)[%d] = %v, want finite and >= 0", i, v)
					}
				}
			})
			t.Run("deterministic", func(t *testing.T) {
				run := func() []float64 {
					f := newF(t)
					for i := range 150 {
						f.Observe(50 + 20*math.Sin(float64(i)/5) + float64(i%7))
					}
					train(f, 5)
					return f.Forecast(12)
				}
				a, b := run(), run()
				for i := range a {
					if a[i] != b[i] {
						t.Fatalf("run 1 and 2 differ at %d: %v != %v", i, a[i], b[i])
					}
				}
			})
		})
	}
}

func train(f Forecaster, steps int) {
	if tr, ok := f.(Trainer); ok {
		tr.Train(steps)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		method string
		opts   Options
		want   string
	}{
		{"unknown method", "prophet", DefaultOptions(), "unknown forecasting method"},
		{"zero horizon", "naive", Options{Horizon: 0, Season: 10}, "forecast.horizon"},
		{"season 1", "naive", Options{Horizon: 5, Season: 1}, "forecast.season"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.method, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New(%q) error = %v, want one containing %q", tc.method, err, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"ewma alpha", func() error { _, err := NewEWMA(0); return err }(), "ewma.alpha"},
		{"hw phi", func() error { c := DefaultHoltWintersConfig(); c.Phi = 0; return c.Validate() }(), "holt_winters.phi"},
		{"ar window", func() error { c := DefaultARConfig(); c.Window = 3; return c.Validate() }(), "ar.window"},
		{"lstm lr", func() error { c := DefaultLSTMConfig(); c.LearningRate = -1; return c.Validate() }(), "lstm.learning_rate"},
		{"monitor unit", func() error { c := DefaultMonitorConfig(); c.Unit = 7 * time.Second; return c.Validate() }(), "monitor.unit"},
		{"backtest stride", func() error { c := DefaultBacktestConfig(); c.Stride = 0; return c.Validate() }(), "backtest.stride"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("error = %v, want one naming %q", tc.err, tc.want)
			}
		})
	}
	for name, err := range map[string]error{
		"monitor": DefaultMonitorConfig().Validate(), "hw": DefaultHoltWintersConfig().Validate(),
		"ar": DefaultARConfig().Validate(), "lstm": DefaultLSTMConfig().Validate(),
		"backtest": DefaultBacktestConfig().Validate(), "options": DefaultOptions().Validate(),
	} {
		if err != nil {
			t.Errorf("default %s config invalid: %v", name, err)
		}
	}
}

func TestARRecoversCoefficients(t *testing.T) {
	c := DefaultARConfig()
	c.Order, c.Window = 2, 4000
	a, err := NewAR(c)
	if err != nil {
		t.Fatal(err)
	}
	// x_t − 100 = 0.6 (x_{t−1} − 100) − 0.3 (x_{t−2} − 100) + ε, ε a deterministic pseudo-noise.
	x1, x2 := 100.0, 100.0
	seed := uint32(7)
	for range 4000 {
		seed = seed*1664525 + 1013904223
		eps := float64(seed>>8)/float64(1<<24) - 0.5
		x := 100 + 0.6*(x1-100) - 0.3*(x2-100) + 4*eps
		a.Observe(x)
		x1, x2 = x, x1
	}
	coef, mu := a.Coefficients()
	want := []float64{0.6, -0.3}
	for i := range want {
		if math.Abs(coef[i]-want[i]) > 0.05 {
			t.Errorf("a_%d = %.3f, want %.2f ± 0.05", i+1, coef[i], want[i])
		}
	}
	if math.Abs(mu-100) > 0.5 {
		t.Errorf("mean = %.2f, want 100 ± 0.5", mu)
	}
}

// seasonal returns a daily-like pattern with period p and a deterministic wobble.
func seasonal(n, p int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 100 + 40*math.Sin(2*math.Pi*float64(i)/float64(p)) + 3*math.Sin(float64(i)*1.7)
	}
	return out
}

func TestSeasonalMethodsBeatNaive(t *testing.T) {
	const p = 48
	series := seasonal(12*p, p)
	o := Options{Horizon: 24, Season: p, Seed: 3}
	c := BacktestConfig{Horizon: 24, Warmup: 6 * p, Stride: 12, InitialTrainSteps: 300, TrainStepsPerOrigin: 10}
	scores, err := Backtest(series, []string{"naive", "holt-winters", "ar"}, o, c)
	if err != nil {
		t.Fatal(err)
	}
	naive := scores[0].RMSE
	for _, s := range scores[1:] {
		if s.RMSE >= naive {
			t.Errorf("%s RMSE %.2f, want below naive %.2f", s.Method, s.RMSE, naive)
		}
	}
}

func TestBacktestCounts(t *testing.T) {
	series := make([]float64, 100)
	for i := range series {
		series[i] = float64(10 + i%5)
	}
	c := BacktestConfig{Horizon: 10, Warmup: 20, Stride: 7}
	scores, err := Backtest(series, []string{"naive", "ewma"}, DefaultOptions(), c)
	if err != nil {
		t.Fatal(err)
	}
	// origins 20, 27, …, 90: (90−20)/7+1 = 11
	if got := scores[0].Origins; got != 11 {
		t.Errorf("origins = %d, want 11", got)
	}
	if got := scores[0].Points; got != 110 {
		t.Errorf("points = %d, want 110", got)
	}
	if got := scores[1].RMSERatio; got != 1 {
		t.Errorf("ewma ratio = %v, want 1", got)
	}
	if _, err := Backtest(series[:25], []string{"naive"}, DefaultOptions(), c); err == nil {
		t.Error("Backtest on a too-short series: want error")
	}
}

func TestMonitor(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type obs struct {
		at    time.Duration
		count int
	}
	tests := []struct {
		name string
		obs  []obs
		want []float64
	}{
		{"one busy sample sets the unit max", []obs{{0, 10}, {2 * time.Second, 15}, {time.Minute, 0}}, []float64{5}},
		{"max over samples", []obs{{0, 5}, {10 * time.Second, 20}, {50 * time.Second, 30}, {time.Minute, 0}}, []float64{6}},
		{"silent units are zeros", []obs{{0, 10}, {3 * time.Minute, 0}}, []float64{2, 0, 0}},
		{"unit not closed before its end", []obs{{0, 10}, {59 * time.Second, 0}}, nil},
		{"late arrival counts in current sample", []obs{{30 * time.Second, 5}, {20 * time.Second, 5}, {time.Minute, 0}}, []float64{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fed []float64
			m, err := NewMonitor(DefaultMonitorConfig(), func(v float64) { fed = append(fed, v) })
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.obs {
				m.Observe(o.count, t0.Add(o.at))
			}
			got := m.History()
			if !equal(got, tc.want) {
				t.Errorf("History() (-want +got):\n-%v\n+%v", tc.want, got)
			}
			if !equal(fed, tc.want) {
				t.Errorf("onUnit values (-want +got):\n-%v\n+%v", tc.want, fed)
			}
		})
	}
}

func TestMonitorLongSilenceIsBounded(t *testing.T) {
	cfg := DefaultMonitorConfig()
	cfg.MaxHistory = 100
	m, _ := NewMonitor(cfg, nil)
	t0 := time.Unix(0, 0)
	m.Observe(60, t0)
	m.Observe(0, t0.Add(365*24*time.Hour))
	if got := m.Len(); got > 100 {
		t.Errorf("Len() = %d after a year of silence, want <= 100", got)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

func TestUnitMaximaFixture(t *testing.T) {
	s := readFixture(t, filepath.Join("testdata", "twitter-20min.rps.csv"))
	u, err := s.UnitMaxima(DefaultMonitorConfig())
	if err != nil {
		t.Fatal(err)
	}
	if len(u) != 20 {
		t.Fatalf("units = %d, want 20", len(u))
	}
	for i, v := range u {
		if v < 20 || v > 200 {
			t.Errorf("unit %d max rate %.1f, want a tweet rate in [20, 200]", i, v)
		}
	}
	perMin := Series{Step: time.Minute, T: []float64{0, 2}, Count: []float64{60, 120}}
	got, _ := perMin.UnitMaxima(DefaultMonitorConfig())
	if want := []float64{1, 0, 2}; !equal(got, want) {
		t.Errorf("per-minute UnitMaxima (-want +got):\n-%v\n+%v", want, got)
	}
}

// readFixture parses a "t_s,count" fixture (header, then integer rows).
func readFixture(t *testing.T, path string) Series {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := Series{Step: time.Second}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		a, c, _ := strings.Cut(line, ",")
		ti, err1 := strconv.Atoi(a)
		ci, err2 := strconv.Atoi(c)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad row %q", path, line)
		}
		s.T = append(s.T, float64(ti))
		s.Count = append(s.Count, float64(ci))
	}
	return s
}

func TestUnitMaximaErrors(t *testing.T) {
	tests := []struct {
		name string
		s    Series
	}{
		{"empty", Series{Step: time.Second}},
		{"lengths differ", Series{Step: time.Second, T: []float64{0, 1}, Count: []float64{1}}},
		{"time goes back", Series{Step: time.Second, T: []float64{1, 0}, Count: []float64{1, 1}}},
		{"negative count", Series{Step: time.Second, T: []float64{0}, Count: []float64{-1}}},
		{"NaN time", Series{Step: time.Second, T: []float64{math.NaN()}, Count: []float64{1}}},
		{"step between sample and unit", Series{Step: 30 * time.Second, T: []float64{0}, Count: []float64{1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.s.UnitMaxima(DefaultMonitorConfig()); err == nil {
				t.Errorf("UnitMaxima(%+v): want error", tc.s)
			}
		})
	}
}

// FuzzUnitMaxima feeds arbitrary (time, count) rows through the arrival monitor's view.
func FuzzUnitMaxima(f *testing.F) {
	f.Add([]byte{0, 4, 1, 5, 2, 9}, true)
	f.Add([]byte{0, 1, 7, 200}, false)
	f.Fuzz(func(t *testing.T, raw []byte, perSecond bool) {
		s := Series{Step: time.Minute}
		if perSecond {
			s.Step = time.Second
		}
		var at float64
		for i := 0; i+1 < len(raw); i += 2 {
			at += float64(raw[i])
			s.T = append(s.T, at)
			s.Count = append(s.Count, float64(raw[i+1]))
		}
		u, err := s.UnitMaxima(DefaultMonitorConfig())
		if err != nil {
			return
		}
		for _, v := range u {
			if v < 0 || math.IsNaN(v) {
				t.Fatalf("negative or NaN unit maximum %v", v)
			}
		}
	})
}
