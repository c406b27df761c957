package slo

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestRecorderSummary(t *testing.T) {
	r := NewRecorder(Spec{Threshold: 100 * time.Millisecond, Target: 0.95})
	for i := 1; i <= 8; i++ { // 8 completed: 20..160 ms, 5 within 100 ms
		tier := TierVM
		if i > 6 {
			tier = TierServerless
		}
		r.Completed(time.Duration(i)*20*time.Millisecond, tier)
	}
	r.Failed()
	r.Rejected()
	r.Batch(3)
	r.Batch(5)
	got := r.Summary("fixed", "unit", 10*time.Second)
	want := Summary{
		Policy: "fixed", Trace: "unit", DurationS: 10,
		Requests: 10, Completed: 8, Failed: 1, Rejected: 1,
		SLO:           SpecJSON{ThresholdMS: 100, Target: 0.95},
		SLOAttainment: 0.5,
		LatencyMS:     LatencyMS{P50: 80, P95: 160, P99: 160, Max: 160},
		ThroughputRPS: 0.8, MeanBatchSize: 4,
		ServedBy:      ServedBy{VM: 6, Serverless: 2},
		InstanceHours: map[string]float64{},
	}
	for _, c := range []struct {
		name      string
		want, got float64
	}{{"p50", want.LatencyMS.P50, got.LatencyMS.P50}, {"p95", want.LatencyMS.P95, got.LatencyMS.P95}, {"p99", want.LatencyMS.P99, got.LatencyMS.P99}} {
		if math.Abs(c.got-c.want) > 0.01*c.want {
			t.Errorf("latency %s (-want +got): -%v +%v (beyond the histogram's 1 %%)", c.name, c.want, c.got)
		}
	}
	got.LatencyMS.P50, got.LatencyMS.P95, got.LatencyMS.P99 = want.LatencyMS.P50, want.LatencyMS.P95, want.LatencyMS.P99
	if gj, wj := js(t, got), js(t, want); gj != wj {
		t.Errorf("Summary (-want +got):\n-%s\n+%s", wj, gj)
	}
	other := NewRecorder(r.Spec())
	other.Completed(10*time.Millisecond, TierVM)
	r.Merge(other)
	if got, want := r.Attainment(), 6.0/11; got != want {
		t.Errorf("Attainment after merge (-want +got): -%v +%v", want, got)
	}
	r.Reset()
	if r.Requests() != 0 || r.Attainment() != 1 {
		t.Errorf("Reset must forget every outcome")
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func BenchmarkRecorderCompleted(b *testing.B) {
	r := NewRecorder(DefaultSpec())
	d := 10 * time.Millisecond
	for b.Loop() {
		r.Completed(d, TierVM)
		d += 997
	}
}
