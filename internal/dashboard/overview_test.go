package dashboard

import (
	"math"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/slo"
)

// TestOverview: one row per model from its latest sample. A model whose window has no request
// is idle with no attainment and no p99 — not the 0 % of one failed request an earlier window
// held — and a model missing from the latest sample is absent.
func TestOverview(t *testing.T) {
	nan := math.NaN()
	ready := InstanceCount{Type: "c5.large", Tier: provider.TierVM, State: provider.StateReady, Count: 2}
	launching := InstanceCount{Type: "c5.large", Tier: provider.TierVM, State: provider.StateLaunching, Count: 1}
	withLatency := func(m ModelSample, p99 time.Duration, att float64) ModelSample {
		m.Latency.P99, m.Attainment = p99, att
		return m
	}
	idle := func(m ModelSample) ModelSample {
		m.ArrivalRate, m.Latency, m.Attainment = 0, Latency{}, nan
		return m
	}
	src := &scripted{samples: [][]ModelSample{
		{
			withLatency(sample("failed-once", 0.1), 5*time.Second, 0), // one request, failed
			withLatency(sample("ok", 50, ready), 120*time.Millisecond, 0.995),
			withLatency(sample("slow", 50, ready), 900*time.Millisecond, 0.6),
			sample("gone", 1),
		},
		{
			idle(sample("failed-once", 0)), // the window holds no request any more
			withLatency(sample("ok", 55, ready, launching), 130*time.Millisecond, 0.99),
			withLatency(sample("slow", 40, ready), 800*time.Millisecond, 0.7),
			idle(sample("scaled-to-zero", 0)),
		},
	}}
	d := newTest(t, src, Options{})
	for i := range 2 {
		if err := d.Step(t.Context(), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	_, got, body := getData(t, d, nil)
	spec := slo.SpecJSON{ThresholdMS: 200, Target: 0.98}
	want := []ModelOverview{
		{Name: "failed-once", State: StateIdle, ArrivalRPS: 0, P99MS: Num(nan), Attainment: Num(nan), SLO: spec},
		{Name: "ok", State: StateOK, ArrivalRPS: 55, P99MS: 130, Attainment: 0.99, Ready: 2, Instances: 3, SLO: spec},
		{Name: "slow", State: StateViolating, ArrivalRPS: 40, P99MS: 800, Attainment: 0.7, Ready: 2, Instances: 2, SLO: spec},
		{Name: "gone", State: StateAbsent, ArrivalRPS: Num(nan), P99MS: Num(nan), Attainment: Num(nan), SLO: spec},
		{Name: "scaled-to-zero", State: StateIdle, ArrivalRPS: 0, P99MS: Num(nan), Attainment: Num(nan), SLO: spec},
	}
	if diff := diffJSON(want, got.Overview); diff != "" {
		t.Errorf("overview (-want +got):\n%s\nbody: %s", diff, body)
	}
	// The idle model's attainment column keeps its history (the failure is still charted) but
	// ends in a gap.
	if diff := diffJSON(nums(0, nan), got.Models[0].Attainment); diff != "" {
		t.Errorf("failed-once attainment (-want +got):\n%s", diff)
	}
}

// TestOverviewEmpty: no sample yet, no row; a model seen only in earlier samples is absent.
func TestOverviewEmpty(t *testing.T) {
	d := newTest(t, &scripted{samples: [][]ModelSample{{}}}, Options{})
	_, got, body := getData(t, d, nil)
	if got.Overview == nil || len(got.Overview) != 0 {
		t.Errorf("overview before any sample = %v, want [] (body %s)", got.Overview, body)
	}
}
