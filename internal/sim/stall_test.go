package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/autoscale"
	"github.com/sloserve/sloserve/internal/slo"
)

// missLog records every closed sample's misses as the scaler sees them (the per-step counts
// MArk's SLO monitor acts on).
type missLog struct {
	inner autoscale.Scaler
	per   []int
}

func (m *missLog) Scale(s autoscale.Snapshot, now time.Time) autoscale.Decision {
	if n := len(s.History); n > 0 {
		m.per = append(m.per, s.History[n-1].Missed)
	}
	return m.inner.Scale(s, now)
}

// runStalls runs 150 rps of Poisson arrivals for 40 s on two fixed 5 ms instances with a 50 ms
// SLO and no per-batch noise, under st, and returns the summary and the per-step misses.
func runStalls(t *testing.T, st Stalls) (slo.Summary, []int) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NoiseCV, cfg.SLO, cfg.Stalls = 0, slo.Spec{Threshold: 50 * time.Millisecond, Target: 0.98}, st
	pol := staticPolicy(2, nil)
	ml := &missLog{inner: pol.Scaler}
	pol.Scaler = ml
	res, err := Run(context.Background(), cfg, nil, oneTypeModel(t, 5*time.Millisecond, 1), pol, newPoisson(150, 6000, 5))
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary, ml.per
}

// TestStallsOffIsIdentical: a stall process with rate 0 changes nothing (lengths or not).
func TestStallsOffIsIdentical(t *testing.T) {
	off, perOff := runStalls(t, Stalls{})
	zero, perZero := runStalls(t, Stalls{Lengths: []time.Duration{80 * time.Millisecond}})
	if !reflect.DeepEqual(off, zero) || !reflect.DeepEqual(perOff, perZero) {
		t.Errorf("rate 0 with lengths changed the run:\n off  %+v\n zero %+v", off, zero)
	}
}

// TestStallsClusterMisses: with no noise the fleet misses nothing; with whole-host stalls of
// 80 ms (more than the 50 ms SLO) every request in flight or queued at a stall misses at once,
// so misses come in bunches in a few steps — a per-step variance many times the mean, where
// independent misses would give about the mean — and the same seed repeats the run.
func TestStallsClusterMisses(t *testing.T) {
	base, _ := runStalls(t, Stalls{})
	if base.SLOAttainment != 1 {
		t.Fatalf("without stalls: attainment %v, want 1 (the baseline the stalls are judged against)", base.SLOAttainment)
	}
	st := Stalls{Rate: 0.5, Lengths: []time.Duration{80 * time.Millisecond}}
	s, per := runStalls(t, st)
	var sum, sq, hit, top int
	for _, m := range per {
		sum, sq, top = sum+m, sq+m*m, max(top, m)
		if m > 0 {
			hit++
		}
	}
	n := float64(len(per))
	mean := float64(sum) / n
	disp := (float64(sq)/n - mean*mean) / mean
	if s.SLOAttainment == 1 || hit == 0 {
		t.Fatalf("with stalls: attainment %v, misses in %d steps, want some", s.SLOAttainment, hit)
	}
	// ~20 stalls in 40 s, each catching the ~12 requests that arrive in its 80 ms.
	if disp < 4 || top < 6 || hit > len(per)*3/4 {
		t.Errorf("misses not clustered: %d in %d of %d steps, at most %d in one, variance/mean %.1f (want ≥ 4, ≥ 6 in one step)",
			sum, hit, len(per), top, disp)
	}
	t.Logf("%d misses in %d of %d steps, at most %d in one, variance/mean %.1f", sum, hit, len(per), top, disp)
	again, per2 := runStalls(t, st)
	if !reflect.DeepEqual(s, again) || !reflect.DeepEqual(per, per2) {
		t.Error("the same seed gave another run")
	}
}

// TestStallsDelayBatchesInFlight: stalls of 20 ms, 2 a second (4 % of the time), leave the
// median alone and lengthen the tail: the batches and the queue they catch wait for their end
// (and the queue that built up meanwhile drains after it).
func TestStallsDelayBatchesInFlight(t *testing.T) {
	base, _ := runStalls(t, Stalls{})
	s, _ := runStalls(t, Stalls{Rate: 2, Lengths: []time.Duration{20 * time.Millisecond}})
	if s.LatencyMS.P50 > base.LatencyMS.P50+1 || s.LatencyMS.P99 < base.LatencyMS.P99+5 || s.LatencyMS.Max < base.LatencyMS.Max+10 {
		t.Errorf("latency without → with stalls: p50 %.1f → %.1f ms, p99 %.1f → %.1f ms, max %.1f → %.1f ms (want the p50 kept, p99 +5 ms or more, max +10 ms or more)",
			base.LatencyMS.P50, s.LatencyMS.P50, base.LatencyMS.P99, s.LatencyMS.P99, base.LatencyMS.Max, s.LatencyMS.Max)
	}
}

// TestStallsValidate: a rate without lengths, a negative rate or a non-positive length is refused.
func TestStallsValidate(t *testing.T) {
	for _, st := range []Stalls{{Rate: 1}, {Rate: -1}, {Rate: 1, Lengths: []time.Duration{0}}} {
		cfg := DefaultConfig()
		cfg.Stalls = st
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v: no error", st)
		}
	}
}
