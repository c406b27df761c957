package experiment

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/forecast"
	markpol "github.com/sloserve/sloserve/internal/policy/mark"
	"github.com/sloserve/sloserve/internal/sim"
)

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
	cat := cost.DefaultCatalog()
	env := sim.Env{Catalog: &cat, Model: sim.DefaultModel(), SLO: sim.DefaultConfig().SLO, Decode: fc.Decoder("mark")}
	p, err := sim.New("mark", env)
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
			if _, err := sim.New("mark", env); err == nil || !strings.Contains(err.Error(), "mark.forecast_model") {
				t.Errorf("New(mark, %q) error = %v, want one naming mark.forecast_model", tc.opts, err)
			}
		})
	}
}
