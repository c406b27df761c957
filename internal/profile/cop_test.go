package profile_test

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/onnx"
	"github.com/sloserve/sloserve/internal/profile"
	bundled "github.com/sloserve/sloserve/models"
)

// copPath is the committed profile data of combined operator profiling: one measurement of the
// bundled models (TestOperatorPredictionBundledModels with SLOSERVE_WRITE_COP=1).
const copPath = "testdata/cop-bundled.json"

// copData is copPath's content.
type copData struct {
	Note   string     `json:"note"`
	Models []copModel `json:"models"`
}

// copModel is one model's whole-model medians by batch size and per-node medians.
type copModel struct {
	Name      string                   `json:"name"`
	Measured  []models.ProfilePoint    `json:"measured"`
	Operators []models.OperatorProfile `json:"operators"`
}

func writeCOPData(t *testing.T, d *copData) {
	t.Helper()
	b, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copPath, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", copPath)
}

// TestCOPErrorBand is INFless §3.3's claim on the committed measurements: an operator store built
// from every bundled model's per-node medians (operators of the same type and weights shape share a
// profile) predicts each model's whole-batch median with OperatorStore.Predict (critical path, no
// offset) within a mean error of 25 %, no point off by more than 60 %, and unbiased (the median
// of predicted/measured in [0.8, 1.2]). INFless Fig. 8 reports < 10 %; the committed run measured
// 19 % (timing on the shared 2-core machine is noisy, and the critical path undercounts branch2's
// parallel branches, which the native runtime runs one after the other) — the bands leave room
// for that, and fail a predictor off by 50 % either way.
func TestCOPErrorBand(t *testing.T) {
	b, err := os.ReadFile(copPath)
	if err != nil {
		t.Fatal(err)
	}
	var d copData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", copPath, err)
	}
	if len(d.Models) < 3 {
		t.Fatalf("%s: %d models, want the bundled ones", copPath, len(d.Models))
	}
	store := profile.NewOperatorStore()
	graphs := map[string]profile.OpGraph{}
	for _, m := range d.Models {
		raw, err := bundled.Model(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		om, err := onnx.Unmarshal(raw)
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		g := profile.OpGraphFromONNX(&om.Graph)
		graphs[m.Name] = g
		for _, op := range m.Operators {
			times := make([]time.Duration, len(op.Nodes))
			for i, n := range op.Nodes {
				times[i] = time.Duration(n.P50MS * float64(time.Millisecond))
			}
			if err := store.AddGraph(g, op.Batch, 1, 0, times); err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
		}
	}
	var sum, worst float64
	var ratios []float64
	for _, m := range d.Models {
		for _, pt := range m.Measured {
			meas := pt.P50MS * float64(time.Millisecond)
			p, err := store.Predict(graphs[m.Name], pt.Batch, 1, 0, 0)
			if err != nil {
				t.Fatalf("%s b=%d: %v", m.Name, pt.Batch, err)
			}
			e := math.Abs(float64(p)-meas) / meas
			t.Logf("%-18s b=%-3d predicted %8.4f ms measured %8.4f ms error %5.1f %%", m.Name, pt.Batch, float64(p)/1e6, meas/1e6, 100*e)
			sum += e
			worst = max(worst, e)
			ratios = append(ratios, float64(p)/meas)
		}
	}
	mean := sum / float64(len(ratios))
	slices.Sort(ratios)
	median := ratios[len(ratios)/2]
	t.Logf("mean error %.1f %%, worst %.1f %%, median predicted/measured %.3f over %d points", 100*mean, 100*worst, median, len(ratios))
	if mean > 0.25 || worst > 0.6 {
		t.Errorf("COP prediction error: mean %.1f %% (want ≤ 25 %%), worst %.1f %% (want ≤ 60 %%)", 100*mean, 100*worst)
	}
	if median < 0.8 || median > 1.2 {
		t.Errorf("COP predictions biased: median predicted/measured %.3f, want in [0.8, 1.2]", median)
	}
}
