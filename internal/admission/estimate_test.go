package admission

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestAdmit(t *testing.T) {
	now := time.Unix(1000, 0)
	ms := time.Millisecond
	per := func(fixed time.Duration, perRow time.Duration) BatchCost {
		return BatchCost{Fixed: fixed, PerRowNS: float64(perRow)}
	}
	for _, c := range []struct {
		name     string
		f        Facts
		deadline time.Duration
		admit    bool
		done     time.Duration
	}{
		{"no estimate yet: two rounds", Facts{Queued: 2, MaxBatch: 1, Slots: 1}, ms, true, 0},
		{"no estimate yet: the batches in flight aside", Facts{Queued: 2, MaxBatch: 1, Slots: 1, Busy: 1}, ms, true, 0},
		{"no estimate yet: not three", Facts{Queued: 3, MaxBatch: 1, Slots: 1, Busy: 1}, time.Hour, false, 0},
		{"no instance usable: wait for one", Facts{Queued: 1000, MaxBatch: 1, Cost: per(time.Second, 0)}, ms, true, 0},
		{"empty queue, free slot: always", Facts{Queued: 1, Slots: 1, Cost: per(time.Hour, 0)}, ms, true, 0},
		{"empty queue, every slot busy: estimated", Facts{Queued: 1, Slots: 1, Busy: 1, BusyLeft: 5 * ms, Cost: per(10*ms, 0), Budget: 40 * ms, Margin: 0.25},
			24 * ms, false, 15 * ms},
		{"one round and the margin fit", Facts{Queued: 8, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0), Budget: 40 * ms, Margin: 0.25}, 20 * ms, true, 10 * ms},
		{"one round without the margin does not", Facts{Queued: 8, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0), Budget: 40 * ms, Margin: 0.25}, 19 * ms, false, 10 * ms},
		{"margin scales with the budget", Facts{Queued: 8, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0), Budget: 200 * ms, Margin: 0.25}, 59 * ms, false, 10 * ms},
		{"two rounds do not", Facts{Queued: 9, MaxBatch: 8, Slots: 1, Cost: per(10*ms, 0)}, 25 * ms, false, 20 * ms},
		{"slots in parallel", Facts{Queued: 16, MaxBatch: 8, Slots: 2, Cost: per(10*ms, 0)}, 25 * ms, true, 15 * ms},
		{"max batch 0 counts as 1", Facts{Queued: 3, Slots: 1, Cost: per(10*ms, 0)}, 35 * ms, false, 30 * ms},
		{"batches in flight: their time left", Facts{Queued: 8, MaxBatch: 2, Slots: 1, Busy: 1, BusyLeft: 4 * ms, Cost: per(10*ms, 0)}, 60 * ms, true, 44 * ms},
		{"per row: small batches stay cheap", Facts{Queued: 4, QueuedRows: 4, Rows: 1, MaxBatch: 4, Slots: 1, Busy: 1, Cost: per(ms, ms/100)}, 10 * ms, true, ms + 40*time.Microsecond},
		{"per row: a large request is its rows", Facts{Queued: 2, QueuedRows: 8001, Rows: 8000, MaxBatch: 4, Slots: 1, Busy: 1, Cost: per(ms, ms/100)}, 60 * time.Second, true, 81*ms + 10*time.Microsecond},
		{"per row: behind a large request", Facts{Queued: 2, QueuedRows: 2, Rows: 1, MaxBatch: 1, Slots: 1, Busy: 1, BusyLeft: 80 * ms, Cost: per(ms, ms/100)}, 50 * ms, false, 82*ms + 20*time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Admit(c.f, now.Add(c.deadline), now)
			var done time.Duration
			if !a.Done.IsZero() {
				done = a.Done.Sub(now)
			}
			if a.Admit != c.admit || done != c.done {
				t.Errorf("Admit (-want +got): -%v %v +%v %v (%s)", c.admit, c.done, a.Admit, done, a.Reason)
			}
			if !a.Admit && a.RetryAfter < time.Second {
				t.Errorf("RetryAfter of a refusal = %v, want ≥ 1 s", a.RetryAfter)
			}
		})
	}
}

// The cost fit: per row once batch sizes vary, so one large batch moves the slope rather than
// the time of small batches; half fixed, half per row while every batch had the same rows; and a
// worker whose batch times swing is not taken for fast by its last run of quick batches.
func TestCostFit(t *testing.T) {
	var f Estimator
	for range 20 {
		f.Observe(1, 2*time.Millisecond)
	}
	if got := f.Cost().Of(1); got != 2*time.Millisecond {
		t.Errorf("one size seen: cost of its rows = %v, want 2ms", got)
	}
	if got := f.Cost().Of(8); got <= 2*time.Millisecond {
		t.Errorf("one size seen: 8 rows cost %v, want more than 1 row's", got)
	}
	f.Observe(8000, 2*time.Second) // one huge batch: 2 ms + 0.25 ms per row
	if got := f.Cost().Of(1); got > 3*time.Millisecond {
		t.Errorf("after one 8,000-row batch, a 1-row batch is estimated at %v, want ≈ 2 ms", got)
	}
	if got := f.Cost().Of(8000); got < time.Second || got > 3*time.Second {
		t.Errorf("after one 8,000-row batch, 8,000 rows are estimated at %v, want ≈ 2 s", got)
	}
	var g Estimator
	for i := range 400 { // 1 ms + 0.1 ms per row, rows 1..4
		r := int64(1 + i%4)
		g.Observe(r, time.Millisecond+time.Duration(r)*100*time.Microsecond)
	}
	c := g.Cost()
	if d := c.Fixed - time.Millisecond; d < -time.Microsecond || d > time.Microsecond || c.PerRowNS < 99e3 || c.PerRowNS > 101e3 {
		t.Errorf("fit of 1 ms + 0.1 ms/row: %+v", c)
	}
	var h Estimator // runs of ten 0.4 ms batches between ten of 20 ms: 10.2 ms on average
	for i := range 400 {
		d := 20 * time.Millisecond
		if i%20 >= 10 {
			d = 400 * time.Microsecond
		}
		h.Observe(1, d)
	}
	if got := h.Cost().Of(1); got < 8*time.Millisecond {
		t.Errorf("after a run of quick batches of a swinging worker (10.2 ms on average), a batch is estimated at %v, want ≥ 8 ms", got)
	}
}

// The miss controller raises the margin on deadline misses and lowers it slowly on requests in
// time, settling where MissTarget of them miss, within [MarginFloor, MarginCap]; between outcomes
// it relaxes towards the floor.
func TestMissControl(t *testing.T) {
	var m MissControl
	now := time.Unix(1000, 0)
	if got := m.Outcome(false, now); got >= MarginStart {
		t.Errorf("after one request in time: %v, want below the start %v", got, MarginStart)
	}
	for range 100 {
		m.Outcome(true, now)
	}
	if m.Frac() != MarginCap {
		t.Errorf("after 100 misses: %v, want the cap %v", m.Frac(), MarginCap)
	}
	if got := m.Outcome(false, now.Add(MarginRelax)); got > MarginFloor+(MarginCap-MarginFloor)/math.E+1e-9 {
		t.Errorf("one relaxation time later: %v, want ≤ floor + (cap − floor)/e", got)
	}
	now = now.Add(MarginRelax)
	for range 100000 {
		m.Outcome(false, now)
	}
	if m.Frac() != MarginFloor {
		t.Errorf("after 100,000 requests in time: %v, want the floor %v", m.Frac(), MarginFloor)
	}
	// At the target miss rate, outcomes at one instant, the fraction stays put on average.
	m.frac = 0.5
	every := int(math.Round(1 / MissTarget))
	for i := range 100000 {
		m.Outcome(i%every == 0, now)
	}
	if m.Frac() < 0.4 || m.Frac() > 0.6 {
		t.Errorf("at the target miss rate (one in %d) the fraction drifted from 0.5 to %v", every, m.Frac())
	}
}

// An answered request counts against the margin when it overran admission's estimate by more
// than the margin, whether or not it then missed its deadline; one admitted without an estimate
// only when it missed; none before OverrunWarmup batches.
func TestBeyondMargin(t *testing.T) {
	var e Estimator
	for range OverrunWarmup {
		e.Observe(1, time.Millisecond)
	}
	for e.Margin() > 0.2 {
		e.Outcome(false, time.Unix(0, 0))
	}
	margin := e.Margin()
	t0 := time.Unix(1000, 0)
	expect, deadline := t0.Add(50*time.Millisecond), t0.Add(200*time.Millisecond)
	edge := 50*time.Millisecond + time.Duration(margin*float64(200*time.Millisecond))
	for _, tc := range []struct {
		done time.Duration
		want bool
	}{{50 * time.Millisecond, false}, {edge, false}, {edge + time.Millisecond, true}, {10 * time.Millisecond, false}} {
		if got := e.BeyondMargin(expect, t0, deadline, t0.Add(tc.done)); got != tc.want {
			t.Errorf("estimate 50 ms, margin %.3f × 200 ms, answered at %v: beyond = %v, want %v", margin, tc.done, got, tc.want)
		}
	}
	if e.BeyondMargin(time.Time{}, t0, deadline, t0.Add(time.Second)) {
		t.Error("admitted without an estimate: beyond the margin, want not (its deadline decides)")
	}
	var cold Estimator
	if cold.BeyondMargin(expect, t0, deadline, t0.Add(time.Second)) {
		t.Errorf("before %d batches: beyond the margin, want not (a cold fit overruns by design)", OverrunWarmup)
	}
}

// TestImmediateMatchesAdmit: whenever Immediate answers, Admit answers the same, whatever the
// estimate and the times; when it does not, Admit needed them (neither of its two reasons).
func TestImmediateMatchesAdmit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for queued := -1; queued <= 4; queued++ {
		for slots := -1; slots <= 3; slots++ {
			for busy := 0; busy <= 3; busy++ {
				f := Facts{Queued: queued, Busy: busy, Slots: slots, Rows: 1, MaxBatch: 2,
					Cost: BatchCost{Fixed: time.Millisecond}, Budget: 100 * time.Millisecond}
				want := Admit(f, now.Add(time.Millisecond), now)
				v, ok := Immediate(queued, busy, slots)
				if Immediately(queued, busy, slots) != ok || ok && !v.Admit {
					t.Errorf("queued %d busy %d slots %d: Immediately %v, Immediate %+v %v", queued, busy, slots, Immediately(queued, busy, slots), v, ok)
				}
				if ok && v != want {
					t.Errorf("queued %d busy %d slots %d: Immediate %+v, Admit %+v", queued, busy, slots, v, want)
				}
				if !ok && (want.Reason == ReasonNoInstance || want.Reason == ReasonFreeSlot) {
					t.Errorf("queued %d busy %d slots %d: Immediate has no answer, Admit %+v", queued, busy, slots, want)
				}
			}
		}
	}
}

// TestAdmitOffsetsMatchesAdmit: AdmitOffsets answers as Admit on the times origin + offset, its
// Done as the offset, on random facts (cold and known costs, ties at the deadline included).
func TestAdmitOffsetsMatchesAdmit(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 6))
	origin := time.Date(2017, 5, 25, 0, 0, 0, 0, time.UTC)
	ms := int64(time.Millisecond)
	for trial := range 200000 {
		f := Facts{Queued: rng.IntN(12) - 1, Rows: 1, MaxBatch: rng.IntN(5), Slots: rng.IntN(4) - 1,
			Busy: rng.IntN(4), BusyLeft: time.Duration(rng.Int64N(20*ms) - ms),
			Budget: time.Duration(rng.Int64N(200 * ms)), Margin: rng.Float64()}
		if rng.IntN(4) > 0 {
			f.Cost = BatchCost{Fixed: time.Duration(rng.Int64N(5 * ms)), PerRowNS: float64(rng.Int64N(ms))}
		}
		now := rng.Int64N(1e15)
		deadline := now + rng.Int64N(300*ms)
		if _, imm := Immediate(f.Queued, f.Busy, f.Slots); !imm && rng.IntN(2) == 0 {
			wait, margin, _, _ := estimate(f) // at the deadline, or 1 ns short
			deadline = now + int64(wait) + int64(margin) - rng.Int64N(2)
		}
		v := Admit(f, origin.Add(time.Duration(deadline)), origin.Add(time.Duration(now)))
		var want int64
		if !v.Done.IsZero() {
			want = int64(v.Done.Sub(origin))
		}
		if admit, done := AdmitOffsets(f, deadline, now); admit != v.Admit || done != want {
			t.Fatalf("trial %d: %+v at %d, deadline %d: offsets (%v, %d), Admit %+v (done %d)", trial, f, now, deadline, admit, done, v, want)
		}
	}
}

// costOld is CostFit.Cost without its one-row shortcut (the reference for the test below).
func costOld(f CostFit) BatchCost {
	if f.w <= 0 {
		return BatchCost{}
	}
	return f.general()
}

// The one-row shortcut of CostFit.Cost gives the general formula's cost bit for bit, over runs
// of one-row batches broken by larger ones (after which the sums meet again as the larger batch
// fades, or not), and is taken.
func TestCostFitOneRowShortcut(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	short := 0
	for _, decay := range FitDecay {
		var f CostFit
		for i := range 100_000 {
			x := 1.0
			if i%25_000 >= 20_000 && i%25_000 < 20_003 { // long runs of one row, a few larger batches
				x = float64(2 + rng.IntN(8))
			}
			f.Add(x, float64(time.Millisecond)+rng.NormFloat64()*1e5, decay)
			if got, want := f.Cost(), costOld(f); got != want {
				t.Fatalf("decay %v batch %d: Cost %+v, the general formula %+v", decay, i, got, want)
			}
			if f.sx == f.w && f.sxx == f.w {
				short++
			}
		}
	}
	if short < 20_000 {
		t.Fatalf("the shortcut was taken %d times of 200,000", short)
	}
}

// Outcome's clamp by comparisons is min(max(frac, MarginFloor), MarginCap) for every value,
// the infinities and NaN included.
func TestOutcomeClamp(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), MarginFloor, MarginCap,
		math.Nextafter(MarginFloor, 0), math.Nextafter(MarginCap, 1)}
	for range 10_000 {
		vals = append(vals, rng.Float64()*2-0.5)
	}
	for _, v := range vals {
		for _, missed := range []bool{false, true} {
			m := MissControl{frac: v}
			step := -MissGain * MissTarget
			if missed {
				step = MissGain * (1 - MissTarget)
			}
			want := min(max(v+step, MarginFloor), MarginCap)
			got := m.Outcome(missed, time.Time{})
			if v == 0 {
				want = min(max(MarginStart+step, MarginFloor), MarginCap)
			}
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("frac %v missed %v: %v, want %v", v, missed, got, want)
			}
		}
	}
}

// BenchmarkObserve is one completed batch fed to the estimator: one row (the shortcut) or four.
func BenchmarkObserve(b *testing.B) {
	for _, rows := range []int64{1, 4} {
		b.Run(fmt.Sprint(rows), func(b *testing.B) {
			var e Estimator
			for i := range b.N {
				e.Observe(rows, time.Duration(1_000_000+i%1000))
			}
		})
	}
}

// TestMissControlOffsetsMatchTimes: the controller fed offsets from a base (OutcomeAt, the
// simulator's path) moves its fraction exactly as one fed the times base + offset, through
// misses that push it to the cap, runs in time that take it to the floor, repeated instants and
// long gaps that relax it; with a wall-clock base and a live clock's monotonic one.
func TestMissControlOffsetsMatchTimes(t *testing.T) {
	for _, base := range []time.Time{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()} {
		rng := rand.New(rand.NewPCG(3, 9))
		var byTime, byOff MissControl
		byOff.SetBase(base)
		var now int64
		capped, floored := false, false
		for step := range 200000 {
			if rng.IntN(4) > 0 {
				now += int64(rng.ExpFloat64() * float64(time.Duration(1+rng.IntN(3))*time.Second) / float64(1+rng.IntN(50)))
			}
			missed := rng.IntN(100) < []int{0, 2, 60}[step/5000%3]
			a, b := byTime.Outcome(missed, base.Add(time.Duration(now))), byOff.OutcomeAt(missed, now)
			if a != b {
				t.Fatalf("step %d: fraction %v by times, %v by offsets", step, a, b)
			}
			capped, floored = capped || a == MarginCap, floored || a == MarginFloor
		}
		if !capped || !floored {
			t.Errorf("the run never reached the cap (%v) or the floor (%v): the test exercises too little", capped, floored)
		}
	}
}
