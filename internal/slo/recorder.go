package slo

import "time"

// Tier says which part of the fleet served a request.
type Tier uint8

// Tiers.
const (
	// TierVM is the VM fleet (the primary tier).
	TierVM Tier = iota
	// TierServerless is the serverless spill-over and burst tier.
	TierServerless
)

// String returns "vm" or "serverless".
func (t Tier) String() string {
	if t == TierServerless {
		return "serverless"
	}
	return "vm"
}

// Recorder accumulates per-request outcomes — completed with a latency, failed, rejected — and
// batch sizes, and produces the shared Summary. Every request must be reported exactly once
// (Completed, Failed or Rejected); failed and rejected requests count as SLO misses. Recording
// never allocates. A Recorder is owned by one goroutine; runtimes with several keep one per
// goroutine and Merge them.
type Recorder struct {
	spec       Spec
	hist       Histogram
	completed  int64
	met        int64
	failed     int64
	rejected   int64
	served     [2]int64
	batches    int64
	batchTotal int64
}

// NewRecorder returns an empty Recorder that judges latencies against spec.
func NewRecorder(spec Spec) *Recorder { return &Recorder{spec: spec} }

// Spec returns the SLO the recorder judges against.
func (r *Recorder) Spec() Spec { return r.spec }

// Completed records a request answered after latency (arrival to response) by tier.
func (r *Recorder) Completed(latency time.Duration, tier Tier) {
	r.hist.Record(latency)
	r.completed++
	if latency <= r.spec.Threshold {
		r.met++
	}
	r.served[tier&1]++
}

// Failed records a request that was admitted but never answered successfully.
func (r *Recorder) Failed() { r.failed++ }

// Rejected records a request that was turned away without being served.
func (r *Recorder) Rejected() { r.rejected++ }

// Batch records one dispatched batch of size requests (for the mean batch size).
func (r *Recorder) Batch(size int) {
	r.batches++
	r.batchTotal += int64(size)
}

// Requests returns how many requests were reported.
func (r *Recorder) Requests() int64 { return r.completed + r.failed + r.rejected }

// Missed returns how many reported requests did not complete within the threshold (late,
// failed or rejected).
func (r *Recorder) Missed() int64 { return r.Requests() - r.met }

// Attainment returns the fraction of all reported requests that completed within the threshold
// (1 when none were reported).
func (r *Recorder) Attainment() float64 {
	n := r.Requests()
	if n == 0 {
		return 1
	}
	return float64(r.met) / float64(n)
}

// Histogram returns the latency histogram of completed requests (for CCDF plots); it is the
// recorder's own, not a copy.
func (r *Recorder) Histogram() *Histogram { return &r.hist }

// Merge adds o's outcomes to r; both must judge against the same Spec.
func (r *Recorder) Merge(o *Recorder) {
	r.hist.Merge(&o.hist)
	r.completed += o.completed
	r.met += o.met
	r.failed += o.failed
	r.rejected += o.rejected
	r.served[0] += o.served[0]
	r.served[1] += o.served[1]
	r.batches += o.batches
	r.batchTotal += o.batchTotal
}

// Reset forgets every outcome.
func (r *Recorder) Reset() { *r = Recorder{spec: r.spec} }

// Fill sets the fields of s the recorder knows: Requests, Completed, Failed, Rejected, SLO,
// SLOAttainment, LatencyMS, MeanBatchSize, ServedBy, and ThroughputRPS (completed requests per
// second of s.DurationS, left alone when DurationS is 0). Policy, Trace, DurationS, CostUSD,
// InstanceHours, ColdStarts, Accuracy and Extra belong to the caller.
func (r *Recorder) Fill(s *Summary) {
	s.Requests = r.Requests()
	s.Completed = r.completed
	s.Failed = r.failed
	s.Rejected = r.rejected
	s.SLO = SpecJSON{ThresholdMS: ms(r.spec.Threshold), Target: r.spec.Target}
	s.SLOAttainment = r.Attainment()
	s.LatencyMS = LatencyMS{
		P50: ms(r.hist.Quantile(0.50)),
		P95: ms(r.hist.Quantile(0.95)),
		P99: ms(r.hist.Quantile(0.99)),
		Max: ms(r.hist.Max()),
	}
	if r.batches > 0 {
		s.MeanBatchSize = float64(r.batchTotal) / float64(r.batches)
	}
	s.ServedBy = ServedBy{VM: r.served[TierVM], Serverless: r.served[TierServerless]}
	if s.DurationS > 0 {
		s.ThroughputRPS = float64(r.completed) / s.DurationS
	}
}

// Summary returns a Summary for a run of policy on trace lasting duration, filled by Fill; cost,
// instance hours and cold starts are left for the caller.
func (r *Recorder) Summary(policy, trace string, duration time.Duration) Summary {
	s := Summary{Policy: policy, Trace: trace, DurationS: duration.Seconds(), InstanceHours: map[string]float64{}}
	r.Fill(&s)
	return s
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
