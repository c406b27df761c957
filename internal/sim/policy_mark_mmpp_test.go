package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sloserve/sloserve/internal/forecast"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// MArk §5.2's MMPP load (Fig. 8): "random and bursty … highly unpredictable, as the occurrence
// and duration of demand surges are completely random". The paper gives no parameters; this
// MMPP(2) alternates a calm state at 60 req/s (mean sojourn 20 min) with surges at 150 req/s
// (mean 5 min): 78 req/s on average, surges of 2.5× arriving without warning. 4 hours, as
// §5.2's MMPP experiments lasted "about 4 hours".
var markMMPP = trace.MMPP2(60, 150, 1.0/(20*60), 1.0/(5*60))

const markMMPPDuration = 4 * time.Hour

// mmppTrace draws d of markMMPP's arrivals with seed.
func mmppTrace(t testing.TB, seed uint64, d time.Duration) *trace.Trace {
	t.Helper()
	var times []time.Duration
	for at := range trace.Seq(trace.Until(markMMPP.Arrivals(seed), d)) {
		times = append(times, at)
	}
	tr, err := trace.NewList(fmt.Sprintf("mmpp-%d", seed), times)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// mmppLSTM trains the LSTM on 24 h of the same MMPP drawn with another seed, as §5.2 trains
// its predictor on "a period of 24-hour data", and returns the model file.
func mmppLSTM(t *testing.T) string {
	t.Helper()
	const day = 24 * time.Hour
	counts := trace.Counts(markMMPP.Arrivals(99), time.Second, day)
	s := forecast.Series{Step: time.Second, T: make([]float64, len(counts)), Count: make([]float64, len(counts))}
	for i, c := range counts {
		s.T[i], s.Count[i] = float64(i), float64(c)
	}
	units, err := s.UnitMaxima(forecast.DefaultMonitorConfig())
	if err != nil {
		t.Fatal(err)
	}
	m, err := forecast.TrainLSTM(units, forecast.DefaultLSTMConfig(), 1500)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mmpp-lstm.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := forecast.WriteLSTMModel(f, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMarkMMPP is MArk §5.2's MMPP experiment (Fig. 8) as a row of the MArk tables: MArk meets
// SL_min on load its forecaster cannot predict — the Bouncer spills surges to the serverless
// tier and the SLO monitor adds capacity — at under half the cost of SageMaker's target
// tracking, 2× over-provisioned, which attains less. docs/mark.md prints the table this logs.
func TestMarkMMPP(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("4 h simulations (deterministic, single-goroutine: the race detector adds only time)")
	}
	tr := mmppTrace(t, 1, markMMPPDuration)
	cat := markCatalog()
	model := mmppLSTM(t)
	rows := []struct{ label, name, opts string }{
		{"sagemaker (ml.c5.large, SageMaker prices)", "sagemaker", "type: c5.large"},
		{"mark on-demand (defaults: EWMA)", "mark", ""},
		{"mark on-demand, LSTM pre-trained on 24 h of MMPP", "mark", "forecast_model: " + model},
		{"mark on-demand, SLO monitor off", "mark", "slo_monitor: {target: 0.000001}"},
		{"mark on-demand, 128 MB functions (spill misses)", "mark", "memory_mb: 128"},
		{"mark on-demand, 128 MB functions, SLO monitor off", "mark", "memory_mb: 128\nslo_monitor: {target: 0.000001}"},
	}
	res := make([]slo.Summary, len(rows))
	for i, r := range rows {
		env := Env{Catalog: cat, Model: markTestModel(t), SLO: markSLO, Load: Load(tr)}
		if r.opts != "" {
			env.Decode = func(v any) error { return yaml.Unmarshal([]byte(r.opts), v) }
		}
		p, err := New(r.name, env)
		if err != nil {
			t.Fatalf("New(%s, %q): %v", r.name, r.opts, err)
		}
		cfg := DefaultConfig()
		cfg.SLO, cfg.SeriesPeriod, cfg.Trace = markSLO, 0, tr.Name
		out, err := Run(context.Background(), cfg, cat, env.Model, p, tr.Arrivals(cfg.Seed))
		if err != nil {
			t.Fatal(err)
		}
		res[i] = out.Summary
		s := out.Summary
		t.Logf("| MMPP | %s | %.4f | %.0f | %.2f (%.2f + %.2f) | %.2f | %d |", r.label, s.SLOAttainment, s.LatencyMS.P99,
			s.CostUSD.Total, s.CostUSD.VM, s.CostUSD.Serverless, res[0].CostUSD.Total/s.CostUSD.Total, s.ServedBy.Serverless)
	}
	sm, mk, slow := res[0], res[1], res[4]
	if mk.SLOAttainment < markSLO.Target {
		t.Errorf("mark attainment %.4f, want ≥ SL_min %.2f", mk.SLOAttainment, markSLO.Target)
	}
	// Under the one admission rule (the live gateway's), target tracking turns away at the door
	// what its fleet cannot finish (429: a miss) instead of queueing it to a 30 s p99; it then
	// attains 0.987 (0.902 without admission, before issue #15), still below MArk's.
	if sm.SLOAttainment >= mk.SLOAttainment {
		t.Errorf("sagemaker attainment %.4f ≥ mark's %.4f: want MArk's Bouncer and SLO monitor ahead on MMPP", sm.SLOAttainment, mk.SLOAttainment)
	}
	if r := sm.CostUSD.Total / mk.CostUSD.Total; r < 2 {
		t.Errorf("sagemaker / mark cost %.2f, want ≥ 2", r)
	}
	// The mechanism: take the serverless tier's speed away and MArk misses SL_min too.
	if slow.SLOAttainment >= markSLO.Target {
		t.Errorf("with 128 MB functions mark attains %.4f: the claim does not rest on the spill", slow.SLOAttainment)
	}
}
