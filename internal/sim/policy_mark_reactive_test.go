package sim

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/forecast"
	markpol "github.com/sloserve/sloserve/internal/policy/mark"
)

// halfForecaster is a forecast that is wrong on purpose: half of the last unit's peak.
type halfForecaster struct{ last float64 }

func (*halfForecaster) Name() string        { return "half" }
func (f *halfForecaster) Observe(v float64) { f.last = v }
func (f *halfForecaster) Forecast(h int) []float64 {
	out := make([]float64, h)
	for i := range out {
		out[i] = f.last / 2
	}
	return out
}

// TestMarkReactiveRecoversWrongForecast (issue #18 item 1; MArk §4.4): 80 req/s for 60 min on
// c5.large with a forecaster that always predicts half the load, so Alg. 1 plans for 40 req/s.
// The serverless tier is taken away (memory_mb 128: every spilled request misses), so only the
// SLO monitor's reactive launches (L = 2, 2 min cool-down, to close the 9-instance gap within
// the run) can close the gap. They must stay while the SLO is violated and while the plan
// alone does not cover the load: the last 15 minutes attain SL_min. Counted as running, every
// reactive launch was surplus at the next plan and terminated after the cool-down (0.70 over
// the last 15 min); released as soon as the SLO recovered, they left a sawtooth (0.91).
func TestMarkReactiveRecoversWrongForecast(t *testing.T) {
	tr := steps(t, "steady-80", [2]float64{60, 80})
	cat := markCatalog()
	env := Env{Catalog: cat, Model: markTestModel(t), SLO: markSLO, Load: Load(tr),
		Decode: func(v any) error {
			return yaml.Unmarshal([]byte("types: [c5.large]\nmemory_mb: 128\nslo_monitor: {launch: 2, cool_down: 2m}"), v)
		}}
	p, err := markpol.NewWith(env, &halfForecaster{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.SLO, cfg.SeriesPeriod, cfg.Trace = markSLO, time.Minute, tr.Name
	res, err := Run(context.Background(), cfg, cat, env.Model, p, tr.Arrivals(cfg.Seed))
	if err != nil {
		t.Fatal(err)
	}
	var late, n float64
	for _, pt := range res.Series.Points {
		if testing.Verbose() {
			fleet := 0
			for _, c := range pt.Instances {
				fleet += c
			}
			t.Logf("%v: attainment %.4f fleet %d", pt.At, pt.Attainment, fleet)
		}
		if pt.At > 45*time.Minute {
			late += pt.Attainment
			n++
		}
	}
	late /= n
	t.Logf("attainment %.4f over the run, %.4f over the last 15 min; cost $%.3f", res.Summary.SLOAttainment, late, res.Summary.CostUSD.Total)
	if late < markSLO.Target {
		t.Errorf("attainment over the last 15 min %.4f, want ≥ %.2f: the reactive launches did not close the forecast's gap", late, markSLO.Target)
	}
}

// TestMarkForecastModel (issue #18 item 4): policies.mark.forecast_model loads a pre-trained
// LSTM (relative to the config file), so the run's forecaster starts trained.
func TestMarkForecastModel(t *testing.T) {
	dir := t.TempDir()
	series := make([]float64, 200)
	for i := range series {
		series[i] = 80 + 20*math.Sin(float64(i)/10)
	}
	m, err := forecast.TrainLSTM(series, forecast.DefaultLSTMConfig(), 5)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := forecast.WriteLSTMModel(f, m); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cfgPath := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(cfgPath, []byte("policies:\n  mark:\n    forecast_model: model.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fc, err := LoadFileConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Catalog: markCatalog(), Model: markTestModel(t), SLO: markSLO, Decode: fc.Decoder("mark")}
	p, err := New("mark", env)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := p.Scaler.(*markpol.Policy).Forecaster().(*forecast.LSTM)
	if !ok || l.Trained() != 5 {
		t.Fatalf("forecaster %T, want the pre-trained LSTM (5 steps)", p.Scaler.(*markpol.Policy).Forecaster())
	}
	for _, tc := range []struct{ name, opts string }{
		{"missing file", "forecast_model: " + filepath.Join(dir, "nope.json")},
		{"other forecaster", "forecaster: ar\nforecast_model: " + filepath.Join(dir, "model.json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env.Decode = func(v any) error { return yaml.Unmarshal([]byte(tc.opts), v) }
			if _, err := New("mark", env); err == nil || !strings.Contains(err.Error(), "mark.forecast_model") {
				t.Errorf("New(mark, %q) error = %v, want one naming mark.forecast_model", tc.opts, err)
			}
		})
	}
}
