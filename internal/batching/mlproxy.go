package batching

import (
	"time"

	"github.com/sloserve/sloserve/internal/timex"

	"github.com/sloserve/sloserve/internal/slo"
)

// MLProxy is MLProxy's SLA-aware batching (Mirzaie Nejad et al., /work/shared/papers/mlproxy.md):
//
//   - Alg. 1, the high-frequency queue scheduler (§2.3, §2.5): on every arrival and timer the
//     dispatch timeout is recomputed from the 95th-percentile upstream latency of a batch one
//     larger than the current queue,
//     DTO = SLO_T − RT95(N_q+1)   (Eq. 1),   TO = DTO − FRT   (Eq. 2),
//     where FRT is how long the oldest request has waited; the batch goes out at once when
//     TO ≤ 0 or N_q ≥ Max_BS, and otherwise at now + TO (Decision.Next).
//     SLO_T is the "SLO target" of §2.4, LatencyGuard × SLO (80 %), not the SLO itself: the
//     original's AIMD controller writes slo_target = 0.8·slo_timeout into the proxy's
//     maxBufferTimeoutMs, and its timer is max(maxBufferTimeoutMs − max(RT95, 50 ms), 50 ms) −
//     FRT (mlproxy-constants.json; MLProxyMinP95, MLProxyMinTimeout). Aiming at the full SLO
//     instead leaves no room for the upstream's noise or for a batch queued behind another at a
//     busy pod, and misses pile up just above the SLO.
//   - §2.2, the monitor: a sliding window (last WindowSamples, at most WindowAge old) of upstream
//     batch latencies per batch size, and one of end-to-end request latencies.
//   - Alg. 2, the low-frequency dynamic batch optimizer (§2.4): every Interval of now, Max_BS
//     becomes ⌊Max_BS × DecMult⌋ when the end-to-end p95 exceeds LatencyGuard × SLO or the share
//     of batches dispatched by timeout exceeds TimeoutRatioThreshold, and Max_BS + IncStep
//     otherwise, clamped to [MinBatch, MaxBatchLimit].
//
// Choices where the paper is silent, each made to keep requests inside the SLO:
//   - A batch size without recent data borrows from its neighbours (see estimate): between two
//     observed sizes it interpolates linearly; above the largest observed size it extrapolates
//     with the slope of the two largest (never negative), or proportionally to the size when
//     only one size was seen (no batching gain assumed: safe); below the smallest observed size
//     it uses that size's p95 (latency grows with batch size). Before any data it assumes
//     P95NoData, the original implementation's 100 ms.
//   - The deadline is min(Oldest + SLO, EarliestDeadline), so per-request deadlines shorter than
//     the SLO are respected; with deadlines arrival + SLO this is exactly Eqs. 1–2.
//   - A batch counts as dispatched by timeout when it was smaller than Max_BS (counted when its
//     Outcome arrives, so that a runtime holding a dispatch for a free slot and asking again does
//     not count it twice). An interval without any completed batch leaves Max_BS unchanged.
//   - Per-size p95s are recomputed at most every RefreshInterval (the original memoizes its
//     monitor statistics for 10 s), and at once when a batch size gets its first sample.
//
// Decide and Observe do not allocate once every batch size in use has been seen.
type MLProxy struct {
	cfg    MLProxyConfig
	slo    time.Duration
	margin time.Duration // SLO − SLO_T: (1 − LatencyGuard) × SLO
	maxBS  int

	upstream []*slo.Window   // by batch size 1..MaxBatchLimit; nil until the size is seen
	est      []time.Duration // p95 estimate by batch size 0..MaxBatchLimit
	fresh    bool            // est was computed from at least one sample
	dirty    bool            // a sample arrived since est was computed
	newSize  bool            // a batch size got its first sample since est was computed
	builtAt  int64           // when est was computed (an offset from base)
	e2e      *slo.Window

	// Instants are kept as nanosecond offsets from base (OffsetPolicy), the first time the
	// policy was given or the base its runtime set; the time API converts with timex.Sub, which
	// keeps the monotonic reading's differences of a live runtime's clock.
	base    time.Time
	baseSet bool

	nextAdjust     int64 // the next AIMD step, once adjustSet
	adjustSet      bool
	batches        int // completed batches in the current AIMD interval
	timeoutBatches int // of which dispatched smaller than Max_BS
	lastAdjust     string
}

var (
	_ Policy       = (*MLProxy)(nil)
	_ OffsetPolicy = (*MLProxy)(nil)
)

// Floors of the original SmartProxy's dispatch timer (mlproxy-constants.json, smart_proxy.timer):
// TO = max(maxBufferTimeoutMs − max(RT95, 50 ms), 50 ms) − FRT.
const (
	// MLProxyMinP95 is the smallest upstream p95 the timer assumes: 50 ms.
	MLProxyMinP95 = 50 * time.Millisecond
	// MLProxyMinTimeout is the smallest DTO: 50 ms after the oldest arrival.
	MLProxyMinTimeout = 50 * time.Millisecond
)

// AIMD outcomes reported by LastAdjustment.
const (
	// AdjustNone: no adjustment has happened yet, or the last interval saw no batch.
	AdjustNone = "none"
	// AdjustIncrease: no violation; Max_BS grew by IncStep.
	AdjustIncrease = "increase"
	// AdjustDecreaseLatency: the end-to-end p95 exceeded LatencyGuard × SLO.
	AdjustDecreaseLatency = "decrease: p95 above guard"
	// AdjustDecreaseTimeouts: too many batches were dispatched by timeout.
	AdjustDecreaseTimeouts = "decrease: timeout ratio"
)

// NewMLProxy returns the mlproxy policy for cfg (SLO, initial Max_BS = MaxBatch, and cfg.MLProxy).
func NewMLProxy(cfg Config) (*MLProxy, error) {
	cfg.Policy = PolicyMLProxy
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := cfg.MLProxy
	p := &MLProxy{
		cfg:        m,
		slo:        cfg.SLO,
		margin:     cfg.SLO - time.Duration(m.LatencyGuard*float64(cfg.SLO)),
		maxBS:      cfg.MaxBatch,
		upstream:   make([]*slo.Window, m.MaxBatchLimit+1),
		est:        make([]time.Duration, m.MaxBatchLimit+1),
		e2e:        slo.NewWindow(m.WindowSamples, m.WindowAge),
		lastAdjust: AdjustNone,
	}
	for i := range p.est {
		p.est[i] = m.P95NoData
	}
	return p, nil
}

// Decide applies Alg. 1 (and, when an Interval has passed, Alg. 2 first).
func (p *MLProxy) Decide(q Queue, now time.Time) Decision {
	nowOff := p.off(now)
	var oldest, earliest int64
	if q.Len > 0 {
		oldest = p.off(q.Oldest)
		earliest = oldest + int64(p.slo)
		if !q.EarliestDeadline.IsZero() {
			earliest = p.off(q.EarliestDeadline)
		}
	}
	dispatch, next, wake, reason := p.decide(q.Len, oldest, earliest, nowOff)
	d := Decision{Dispatch: dispatch, Reason: reason}
	if wake {
		d.Next = now.Add(time.Duration(next - nowOff))
	}
	return d
}

// SetBase implements OffsetPolicy: offsets count from base (before the first call only).
func (p *MLProxy) SetBase(base time.Time) {
	if !p.baseSet {
		p.base, p.baseSet = base, true
	}
}

// off is t as an offset from the base (the first time given, unless SetBase came first).
func (p *MLProxy) off(t time.Time) int64 {
	if !p.baseSet {
		p.SetBase(t)
	}
	return int64(timex.Sub(t, p.base))
}

// DecideOffsets implements OffsetPolicy: Decide on offsets from the base, earliest being the
// queue's earliest deadline (oldest + SLO when the requests carry none); next is -1 for none.
func (p *MLProxy) DecideOffsets(n int, oldest, earliest, now int64) (dispatch int, next int64) {
	dispatch, next, wake, _ := p.decide(n, oldest, earliest, now)
	if !wake {
		next = -1
	}
	return dispatch, next
}

// decide is Alg. 1 on offsets: the dispatch, when to ask again (wake false: only on the next
// event) and the reason.
func (p *MLProxy) decide(n int, oldest, earliest, now int64) (dispatch int, next int64, wake bool, reason string) {
	p.tick(now)
	if n <= 0 {
		return 0, 0, false, ReasonEmpty
	}
	if n >= p.maxBS {
		return p.maxBS, now, n > p.maxBS, ReasonFull
	}
	deadline := min(oldest+int64(p.slo), earliest)
	// SLO_T is the AIMD's SLO target, LatencyGuard × SLO, measured back from the deadline.
	target := deadline - int64(p.margin)
	rt95 := int64(max(p.p95(now, n+1), MLProxyMinP95))
	due := target - rt95 // Oldest + DTO; TO = due − now
	if floor := oldest + int64(MLProxyMinTimeout); due < floor {
		// The original's 50 ms floor on DTO, unless that would already miss the deadline.
		due = min(floor, deadline-rt95)
	}
	if now >= due {
		return n, 0, false, ReasonTimeout
	}
	return 0, due, true, ReasonWait
}

// Observe feeds the monitor with one completed batch: its upstream latency (Completed −
// Dispatched, unless it failed) under its size, and each request's end-to-end latency.
func (p *MLProxy) Observe(o Outcome, now time.Time) {
	nowOff := p.off(now)
	completed := p.off(o.Completed)
	p.tick(nowOff)
	if o.Size <= 0 {
		return
	}
	p.count(o.Size)
	if !o.Failed {
		p.upstreamAt(o.Size).AddAt(nowOff, timex.Sub(o.Completed, o.Dispatched))
		p.dirty = true
	}
	for _, a := range o.Arrivals {
		p.e2e.AddAt(nowOff, time.Duration(completed-p.off(a)))
	}
}

// ObserveOffsets implements OffsetPolicy: Observe on offsets from the base.
func (p *MLProxy) ObserveOffsets(size int, dispatched, completed int64, arrivals []int64, failed bool, now int64) {
	p.tick(now)
	if size <= 0 {
		return
	}
	p.count(size)
	if !failed {
		p.upstreamAt(size).AddAt(now, time.Duration(completed-dispatched))
		p.dirty = true
	}
	for _, a := range arrivals {
		p.e2e.AddAt(now, time.Duration(completed-a))
	}
}

// count counts a completed batch of size for the AIMD interval.
func (p *MLProxy) count(size int) {
	p.batches++
	if size < p.maxBS {
		p.timeoutBatches++
	}
}

// upstreamAt is the window of batch size s's upstream latencies (created at its first sample).
func (p *MLProxy) upstreamAt(s int) *slo.Window {
	s = min(s, len(p.upstream)-1)
	w := p.upstream[s]
	if w == nil {
		w = slo.NewWindow(p.cfg.WindowSamples, p.cfg.WindowAge)
		p.upstream[s] = w
		p.newSize = true
	}
	return w
}

// MaxBatch returns the current Max_BS.
func (p *MLProxy) MaxBatch() int { return p.maxBS }

// LastAdjustment returns what the last AIMD step did (one of the Adjust constants).
func (p *MLProxy) LastAdjustment() string { return p.lastAdjust }

// P95 returns the estimated 95th-percentile upstream latency of a batch of size n at now
// (RT95_n in Eq. 1), recomputing the estimates when they are due.
func (p *MLProxy) P95(now time.Time, n int) time.Duration { return p.p95(p.off(now), n) }

// p95 is P95 at the offset now.
func (p *MLProxy) p95(now int64, n int) time.Duration {
	if p.dirty && (p.newSize || !p.fresh || now-p.builtAt >= int64(p.cfg.RefreshInterval)) ||
		p.fresh && p.cfg.RefreshInterval > 0 && now-p.builtAt >= int64(p.cfg.RefreshInterval) {
		p.rebuild(now)
	}
	n = max(1, min(n, len(p.est)-1))
	return p.est[n]
}

// rebuild recomputes every size's p95 from the windows and fills the sizes without data.
func (p *MLProxy) rebuild(now int64) {
	p.dirty, p.newSize, p.builtAt = false, false, now
	const missing = time.Duration(-1)
	seen := 0
	for s := 1; s < len(p.est); s++ {
		p.est[s] = missing
		if w := p.upstream[s]; w != nil {
			if v, ok := w.QuantileAt(now, 0.95); ok {
				p.est[s] = v
				seen++
			}
		}
	}
	p.fresh = seen > 0
	if seen == 0 {
		for s := range p.est {
			p.est[s] = p.cfg.P95NoData
		}
		return
	}
	// Below the smallest observed size, and between observed sizes.
	lo, prev := 0, 0 // the last and the one-before-last observed sizes, 0 = none
	for s := 1; s < len(p.est); s++ {
		if p.est[s] == missing {
			continue
		}
		if lo == 0 {
			for k := 1; k < s; k++ {
				p.est[k] = p.est[s]
			}
		} else {
			for k := lo + 1; k < s; k++ {
				p.est[k] = p.est[lo] + time.Duration(float64(p.est[s]-p.est[lo])*float64(k-lo)/float64(s-lo))
			}
		}
		prev, lo = lo, s
	}
	// Above the largest observed size.
	hi := lo
	for k := hi + 1; k < len(p.est); k++ {
		if prev == 0 {
			p.est[k] = time.Duration(float64(p.est[hi]) * float64(k) / float64(hi))
			continue
		}
		slope := max(0, float64(p.est[hi]-p.est[prev])/float64(hi-prev))
		p.est[k] = p.est[hi] + time.Duration(slope*float64(k-hi))
	}
	p.est[0] = p.est[1]
}

// tick runs Alg. 2 once for every Interval boundary that the offset now has passed.
func (p *MLProxy) tick(now int64) {
	if !p.adjustSet {
		p.nextAdjust, p.adjustSet = now+int64(p.cfg.Interval), true
		return
	}
	if now < p.nextAdjust {
		return
	}
	for now >= p.nextAdjust {
		p.nextAdjust += int64(p.cfg.Interval)
	}
	if p.batches == 0 {
		p.lastAdjust = AdjustNone
		return
	}
	ratio := float64(p.timeoutBatches) / float64(p.batches)
	p.batches, p.timeoutBatches = 0, 0
	guard := time.Duration(p.cfg.LatencyGuard * float64(p.slo))
	switch rt, ok := p.e2e.QuantileAt(now, 0.95); {
	case ok && rt > guard:
		p.lastAdjust = AdjustDecreaseLatency
	case ratio > p.cfg.TimeoutRatioThreshold:
		p.lastAdjust = AdjustDecreaseTimeouts
	default:
		p.lastAdjust = AdjustIncrease
		p.maxBS = min(p.maxBS+p.cfg.IncStep, p.cfg.MaxBatchLimit)
		return
	}
	p.maxBS = max(int(float64(p.maxBS)*p.cfg.DecMult), p.cfg.MinBatch)
}
