package dashboard

import (
	"math"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

func TestSyntheticInvariants(t *testing.T) {
	src := NewSynthetic(7)
	prevCost := map[string]float64{}
	sawServerless, sawLaunching, sawDraining := false, false, false
	for i := range 600 {
		now := t0.Add(time.Duration(i) * time.Second)
		got, err := src.Sample(t.Context(), now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(DefaultSyntheticModels()) {
			t.Fatalf("t=%ds: %d models, want %d", i, len(got), len(DefaultSyntheticModels()))
		}
		for _, m := range got {
			at := func(format string, args ...any) {
				t.Helper()
				t.Errorf("t=%ds model %s: "+format, append([]any{i, m.Model}, args...)...)
			}
			if m.ArrivalRate < 0 || m.Forecast < 0 || math.IsNaN(m.ArrivalRate) {
				at("rate %v, forecast %v; want >= 0", m.ArrivalRate, m.Forecast)
			}
			if !(m.Latency.P50 > 0 && m.Latency.P50 <= m.Latency.P95 && m.Latency.P95 <= m.Latency.P99) {
				at("latency %+v; want 0 < p50 <= p95 <= p99", m.Latency)
			}
			if m.Attainment < 0 || m.Attainment > 1 {
				at("attainment %v; want in [0, 1]", m.Attainment)
			}
			if m.BatchMean < 1 || m.BatchMean > m.BatchMax+1e-9 {
				at("batch mean %v, max %v; want 1 <= mean <= max", m.BatchMean, m.BatchMax)
			}
			if m.Cost.Total < prevCost[m.Model] || math.Abs(m.Cost.Total-m.Cost.VM-m.Cost.Serverless) > 1e-12 {
				at("cost %+v after %v; want non-decreasing total = vm + serverless", m.Cost, prevCost[m.Model])
			}
			prevCost[m.Model] = m.Cost.Total
			ready := 0
			for _, c := range m.Instances {
				switch {
				case c.Tier == provider.TierServerless:
					sawServerless = true
				case c.State == provider.StateLaunching:
					sawLaunching = true
				case c.State == provider.StateDraining:
					sawDraining = true
				case c.State == provider.StateReady:
					ready += c.Count
				}
			}
			if ready < 1 {
				at("no ready VM instance: %+v", m.Instances)
			}
		}
	}
	if !sawServerless || !sawLaunching || !sawDraining {
		t.Errorf("ten minutes showed serverless %v, launching %v, draining %v; want all (the demo shows scaling)",
			sawServerless, sawLaunching, sawDraining)
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	a, b := NewSynthetic(3), NewSynthetic(3)
	for i := range 50 {
		now := t0.Add(time.Duration(i) * time.Second)
		x, _ := a.Sample(t.Context(), now)
		y, _ := b.Sample(t.Context(), now)
		for j := range x {
			if x[j].ArrivalRate != y[j].ArrivalRate || x[j].Cost != y[j].Cost || x[j].Latency != y[j].Latency {
				t.Fatalf("t=%ds: same seed gave different samples:\n%+v\n%+v", i, x[j], y[j])
			}
		}
	}
}
