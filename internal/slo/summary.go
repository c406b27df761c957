package slo

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Spec is a latency service-level objective: a fraction Target of all requests must complete
// within Threshold (MArk's RT_max and SL_min; MLProxy's and BATCH's "p95 ≤ T" is Target 0.95).
type Spec struct {
	// Threshold is the latency bound a request must meet.
	Threshold time.Duration `json:"-"`
	// Target is the fraction of requests, in (0, 1], that must meet Threshold.
	Target float64 `json:"target"`
}

// DefaultSpec returns the SLO used when none is configured: 98 % within 200 ms (MArk §5.1).
func DefaultSpec() Spec { return Spec{Threshold: 200 * time.Millisecond, Target: 0.98} }

// Validate reports the first field that is out of range.
func (s Spec) Validate() error {
	if s.Threshold <= 0 {
		return fmt.Errorf("slo.threshold: must be > 0, got %v", s.Threshold)
	}
	if !(s.Target > 0 && s.Target <= 1) {
		return fmt.Errorf("slo.target: must be in (0, 1], got %v", s.Target)
	}
	return nil
}

// SpecJSON is the wire form of a Spec inside a Summary.
type SpecJSON struct {
	ThresholdMS float64 `json:"threshold_ms"`
	Target      float64 `json:"target"`
}

// LatencyMS holds latency percentiles in milliseconds.
type LatencyMS struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// CostUSD splits the cost of a run by tier, in US dollars.
type CostUSD struct {
	Total      float64 `json:"total"`
	VM         float64 `json:"vm"`
	Serverless float64 `json:"serverless"`
}

// ServedBy counts completed requests per tier.
type ServedBy struct {
	VM         int64 `json:"vm"`
	Serverless int64 `json:"serverless"`
}

// Summary is the result every measuring command prints (ARCHITECTURE.md, "The Summary").
// SLOAttainment is the fraction of all requests — failed and rejected ones count as misses —
// that completed within the threshold. Fields may be added; existing ones keep their meaning.
type Summary struct {
	Policy        string             `json:"policy"`
	Trace         string             `json:"trace"`
	DurationS     float64            `json:"duration_s"`
	Requests      int64              `json:"requests"`
	Completed     int64              `json:"completed"`
	Failed        int64              `json:"failed"`
	Rejected      int64              `json:"rejected"`
	SLO           SpecJSON           `json:"slo"`
	SLOAttainment float64            `json:"slo_attainment"`
	LatencyMS     LatencyMS          `json:"latency_ms"`
	ThroughputRPS float64            `json:"throughput_rps"`
	MeanBatchSize float64            `json:"mean_batch_size"`
	CostUSD       CostUSD            `json:"cost_usd"`
	InstanceHours map[string]float64 `json:"instance_hours"`
	ServedBy      ServedBy           `json:"served_by"`
	ColdStarts    int64              `json:"cold_starts"`
	Accuracy      *float64           `json:"accuracy"`
	// Extra carries command-specific figures (e.g. work per request) without changing the shape.
	Extra map[string]float64 `json:"extra,omitempty"`
}

// WriteJSON writes v (a Summary or a slice of them) as indented JSON followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}
