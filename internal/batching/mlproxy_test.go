package batching

import (
	"testing"
	"time"
)

func newTestMLProxy(t *testing.T, mutate func(*Config)) *MLProxy {
	t.Helper()
	c := DefaultConfig()
	c.Policy = PolicyMLProxy
	c.MaxBatch = 5
	c.MLProxy.RefreshInterval = 0
	if mutate != nil {
		mutate(&c)
	}
	p, err := NewMLProxy(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// batch returns the Outcome of a batch of size n dispatched at dispatchedMS that took upMS, each
// request having arrived e2eMS − upMS before... simply: all arrivals at dispatch − waitMS.
func batch(n, dispatchedMS, upMS, waitMS int) Outcome {
	arr := make([]time.Time, n)
	for i := range arr {
		arr[i] = at(dispatchedMS - waitMS)
	}
	return Outcome{Size: n, Dispatched: at(dispatchedMS), Completed: at(dispatchedMS + upMS), Arrivals: arr}
}

func TestMLProxyDecide(t *testing.T) {
	tests := []struct {
		name    string
		observe []Outcome // each observed at its Completed time
		q       Queue
		now     time.Time
		want    Decision
	}{
		{name: "empty", q: Queue{}, now: at(0), want: Decision{Reason: ReasonEmpty}},
		// SLO 200 ms: SLO_T = 0.8 × 200 = 160 ms. No data: RT95 = 100 ms, DTO = 160 − 100 = 60 ms,
		// TO = DTO − FRT.
		{name: "no data waits DTO", q: Queue{Len: 1, Oldest: at(0), EarliestDeadline: at(200)}, now: at(0),
			want: Decision{Next: at(60), Reason: ReasonWait}},
		{name: "no data FRT counts", q: Queue{Len: 2, Oldest: at(0), EarliestDeadline: at(200)}, now: at(40),
			want: Decision{Next: at(60), Reason: ReasonWait}},
		{name: "timeout", q: Queue{Len: 2, Oldest: at(0), EarliestDeadline: at(200)}, now: at(60),
			want: Decision{Dispatch: 2, Reason: ReasonTimeout}},
		{name: "max batch", q: Queue{Len: 5, Oldest: at(0), EarliestDeadline: at(200)}, now: at(1),
			want: Decision{Dispatch: 5, Reason: ReasonFull}},
		{name: "above max batch asks again", q: Queue{Len: 7, Oldest: at(0), EarliestDeadline: at(200)}, now: at(1),
			want: Decision{Dispatch: 5, Next: at(1), Reason: ReasonFull}},
		// Sizes 1 (50 ms) and 3 (80 ms) seen: RT95_2 = 65 ms interpolated; 1000 + 160 − 65.
		{name: "interpolated N+1", observe: []Outcome{batch(1, 0, 50, 0), batch(3, 10, 80, 0)},
			q: Queue{Len: 1, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1000),
			want: Decision{Next: at(1095), Reason: ReasonWait}},
		// RT95_4 = 80 + (80−50)/(3−1)·1 = 95 ms extrapolated by the last slope; 1000 + 160 − 95.
		{name: "extrapolated N+1", observe: []Outcome{batch(1, 0, 50, 0), batch(3, 10, 80, 0)},
			q: Queue{Len: 3, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1020),
			want: Decision{Next: at(1065), Reason: ReasonWait}},
		// Only size 2 (50 ms) seen: RT95_4 = 50·4/2 = 100 ms (no batching gain assumed).
		{name: "proportional from one size", observe: []Outcome{batch(2, 0, 50, 0)},
			q: Queue{Len: 3, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1000),
			want: Decision{Next: at(1060), Reason: ReasonWait}},
		// Below the smallest observed size: RT95_2 = 60 ms is the size-2 sample (N+1 = 2 here).
		{name: "below smallest", observe: []Outcome{batch(2, 0, 60, 0)},
			q: Queue{Len: 1, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1000),
			want: Decision{Next: at(1100), Reason: ReasonWait}},
		// RT95_2 = 30 ms is floored to 50 ms (MLProxyMinP95): 1000 + 160 − 50.
		{name: "p95 floor", observe: []Outcome{batch(2, 0, 30, 0)},
			q: Queue{Len: 1, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1000),
			want: Decision{Next: at(1110), Reason: ReasonWait}},
		// RT95_2 = 130 ms: DTO = 160 − 130 = 30 ms is floored to 50 ms (MLProxyMinTimeout), which
		// still leaves the batch 1050 + 130 < 1200 to meet its deadline.
		{name: "DTO floor", observe: []Outcome{batch(1, 0, 65, 0)},
			q: Queue{Len: 1, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1000),
			want: Decision{Next: at(1050), Reason: ReasonWait}},
		// A failed batch teaches nothing about upstream latency: still the 100 ms default.
		{name: "failed batch ignored", observe: []Outcome{{Size: 2, Dispatched: at(0), Completed: at(10), Failed: true}},
			q: Queue{Len: 1, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1000),
			want: Decision{Next: at(1060), Reason: ReasonWait}},
		// A shorter per-request deadline replaces Oldest + SLO, keeping the same 40 ms margin:
		// 150 − 40 − 100 = 10 ms, floored to 50 ms (150 − 100 = 50 is still in time).
		{name: "earliest deadline", q: Queue{Len: 2, Oldest: at(0), EarliestDeadline: at(150)}, now: at(10),
			want: Decision{Next: at(50), Reason: ReasonWait}},
		{name: "earliest deadline without floor", q: Queue{Len: 1, Oldest: at(0), EarliestDeadline: at(190)}, now: at(10),
			want: Decision{Next: at(50), Reason: ReasonWait}},
		// RT95_2 = 500 ms: not even the deadline can be met; dispatch at once (§2.5).
		{name: "DTO negative dispatches at once", observe: []Outcome{batch(1, 0, 250, 0)},
			q: Queue{Len: 1, Oldest: at(1000), EarliestDeadline: at(1200)}, now: at(1000),
			want: Decision{Dispatch: 1, Reason: ReasonTimeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestMLProxy(t, nil)
			for _, o := range tt.observe {
				p.Observe(o, o.Completed)
			}
			if got := p.Decide(tt.q, tt.now); got != tt.want {
				t.Errorf("Decide (-want +got):\n-%+v\n+%+v", tt.want, got)
			}
		})
	}
}

func TestMLProxyRefreshInterval(t *testing.T) {
	p := newTestMLProxy(t, func(c *Config) { c.MLProxy.RefreshInterval = 10 * time.Second })
	p.Observe(batch(1, 0, 30, 0), at(30)) // first sample of size 1: estimates rebuilt at once
	if got := p.P95(at(40), 1); got != 30*time.Millisecond {
		t.Fatalf("P95 after first sample (-want +got): -30ms +%v", got)
	}
	p.Observe(batch(1, 100, 90, 0), at(190)) // same size: memoized until 10 s after the rebuild
	if got := p.P95(at(5000), 1); got != 30*time.Millisecond {
		t.Errorf("P95 within the refresh interval (-want +got): -30ms +%v", got)
	}
	if got := p.P95(at(10_040), 1); got != 90*time.Millisecond {
		t.Errorf("P95 after the refresh interval (-want +got): -90ms +%v", got)
	}
}

func TestMLProxyAIMD(t *testing.T) {
	sec := func(s int) time.Time { return at(s * 1000) }
	p := newTestMLProxy(t, nil) // Max_BS 5, +1, ×0.8, every 30 s, guard 160 ms, ratio 0.5
	steps := []struct {
		name     string
		observe  []Outcome
		obsAt    time.Time
		decideAt time.Time
		wantBS   int
		wantAdj  string
	}{
		{name: "start", decideAt: sec(0), wantBS: 5, wantAdj: AdjustNone},
		{name: "full batch, fast: increase", observe: []Outcome{batch(5, 1000, 20, 30)}, obsAt: sec(1), decideAt: sec(30), wantBS: 6, wantAdj: AdjustIncrease},
		{name: "only timeouts: decrease", observe: []Outcome{batch(2, 31000, 20, 30)}, obsAt: sec(31), decideAt: sec(60), wantBS: 4, wantAdj: AdjustDecreaseTimeouts},
		{name: "p95 above 80% SLO: decrease", observe: []Outcome{batch(4, 61000, 20, 150)}, obsAt: sec(61), decideAt: sec(90), wantBS: 3, wantAdj: AdjustDecreaseLatency},
		{name: "idle interval: unchanged", decideAt: sec(120), wantBS: 3, wantAdj: AdjustNone},
		{name: "several intervals late: one step", observe: []Outcome{batch(3, 121000, 20, 10)}, obsAt: sec(121), decideAt: sec(400), wantBS: 4, wantAdj: AdjustIncrease},
		{name: "next boundary is 420 s", observe: []Outcome{batch(4, 401000, 20, 10)}, obsAt: sec(401), decideAt: sec(419), wantBS: 4, wantAdj: AdjustIncrease},
		{name: "boundary reached", decideAt: sec(420), wantBS: 5, wantAdj: AdjustIncrease},
	}
	for _, s := range steps {
		for _, o := range s.observe {
			p.Observe(o, s.obsAt)
		}
		p.Decide(Queue{}, s.decideAt)
		if got, adj := p.MaxBatch(), p.LastAdjustment(); got != s.wantBS || adj != s.wantAdj {
			t.Errorf("%s: Max_BS, adjustment (-want +got): -%d %q +%d %q", s.name, s.wantBS, s.wantAdj, got, adj)
		}
	}
}

func TestMLProxyAIMDClamps(t *testing.T) {
	p := newTestMLProxy(t, func(c *Config) { c.MaxBatch = 1; c.MLProxy.MaxBatchLimit = 2 })
	p.Decide(Queue{}, at(0))
	steps := []struct {
		size   int // of the one batch completed in the interval
		wantBS int
	}{
		{1, 2}, // full at Max_BS 1: +1
		{2, 2}, // full at 2: +1 clamped to MaxBatchLimit
		{1, 1}, // timeout (1 < 2): ⌊2 × 0.8⌋ = 1
		{1, 2}, // full at 1: +1
		{1, 1}, // timeout
	}
	for i, s := range steps {
		now := at((i + 1) * 30_000)
		done := now.Add(-time.Second)
		p.Observe(Outcome{Size: s.size, Dispatched: done.Add(-10 * time.Millisecond), Completed: done}, done)
		p.Decide(Queue{}, now)
		if got := p.MaxBatch(); got != s.wantBS {
			t.Errorf("step %d: Max_BS (-want +got): -%d +%d", i, s.wantBS, got)
		}
	}
	q := newTestMLProxy(t, func(c *Config) { c.MaxBatch = 1; c.MLProxy.LatencyGuard = 0.01 })
	q.Decide(Queue{}, at(0))
	q.Observe(batch(1, 1000, 20, 50), at(1020)) // e2e 70 ms > 2 ms guard: ⌊1 × 0.8⌋ = 0 → MinBatch
	q.Decide(Queue{}, at(30_000))
	if got := q.MaxBatch(); got != 1 {
		t.Errorf("Max_BS after decrease at the floor (-want +got): -1 +%d", got)
	}
}

func BenchmarkMLProxyDecideObserve(b *testing.B) {
	c := DefaultConfig()
	c.Policy = PolicyMLProxy
	p, err := NewMLProxy(c)
	if err != nil {
		b.Fatal(err)
	}
	arr := make([]time.Time, 8)
	now := t0
	for i := range 16 { // warm every size up
		p.Observe(Outcome{Size: i%8 + 1, Dispatched: now, Completed: now.Add(20 * time.Millisecond), Arrivals: arr[:i%8+1]}, now)
	}
	i := 0
	for b.Loop() {
		now = now.Add(100 * time.Microsecond)
		d := p.Decide(Queue{Len: i%4 + 1, Oldest: now.Add(-time.Millisecond), EarliestDeadline: now.Add(199 * time.Millisecond)}, now)
		_ = d
		if i%4 == 3 {
			for k := range arr {
				arr[k] = now.Add(-5 * time.Millisecond)
			}
			p.Observe(Outcome{Size: 4, Dispatched: now, Completed: now.Add(20 * time.Millisecond), Arrivals: arr[:4]}, now)
		}
		i++
	}
}

func BenchmarkFixedDecide(b *testing.B) {
	p := NewFixed(8, 50*time.Millisecond)
	now := t0
	for b.Loop() {
		now = now.Add(time.Microsecond)
		p.Decide(Queue{Len: 3, Oldest: now.Add(-time.Millisecond), EarliestDeadline: now.Add(time.Second)}, now)
	}
}
