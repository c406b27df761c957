package batching

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestFixedDecide(t *testing.T) {
	tests := []struct {
		name string
		n    int
		w    time.Duration
		q    Queue
		now  time.Time
		want Decision
	}{
		{"empty", 4, 50 * time.Millisecond, Queue{}, at(0), Decision{Reason: ReasonEmpty}},
		{"one waits for the window", 4, 50 * time.Millisecond,
			Queue{Len: 1, Oldest: at(10), EarliestDeadline: at(210)}, at(10), Decision{Next: at(60), Reason: ReasonWait}},
		{"window expired", 4, 50 * time.Millisecond,
			Queue{Len: 3, Oldest: at(10), EarliestDeadline: at(210)}, at(60), Decision{Dispatch: 3, Reason: ReasonWindow}},
		{"full batch", 4, 50 * time.Millisecond,
			Queue{Len: 4, Oldest: at(10), EarliestDeadline: at(210)}, at(20), Decision{Dispatch: 4, Reason: ReasonFull}},
		{"more than full asks again now", 4, 50 * time.Millisecond,
			Queue{Len: 6, Oldest: at(10), EarliestDeadline: at(210)}, at(20), Decision{Dispatch: 4, Next: at(20), Reason: ReasonFull}},
		{"short deadline shortens the wait", 4, 50 * time.Millisecond,
			Queue{Len: 2, Oldest: at(10), EarliestDeadline: at(40)}, at(15), Decision{Next: at(40), Reason: ReasonWait}},
		{"deadline reached", 4, 50 * time.Millisecond,
			Queue{Len: 2, Oldest: at(10), EarliestDeadline: at(40)}, at(40), Decision{Dispatch: 2, Reason: ReasonDeadline}},
		{"zero window dispatches at once", 8, 0,
			Queue{Len: 1, Oldest: at(5), EarliestDeadline: at(205)}, at(5), Decision{Dispatch: 1, Reason: ReasonWindow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewFixed(tt.n, tt.w).Decide(tt.q, tt.now)
			if got != tt.want {
				t.Errorf("Decide (-want +got):\n-%+v\n+%+v", tt.want, got)
			}
		})
	}
}

func TestNoneDecide(t *testing.T) {
	tests := []struct {
		name string
		q    Queue
		want Decision
	}{
		{"empty", Queue{}, Decision{Reason: ReasonEmpty}},
		{"one", Queue{Len: 1, Oldest: at(0)}, Decision{Dispatch: 1, Reason: ReasonUnbatched}},
		{"several", Queue{Len: 3, Oldest: at(0)}, Decision{Dispatch: 1, Next: at(7), Reason: ReasonUnbatched}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewNone().Decide(tt.q, at(7)); got != tt.want {
				t.Errorf("Decide (-want +got):\n-%+v\n+%+v", tt.want, got)
			}
		})
	}
}

func linearCurve(t *testing.T, base, per time.Duration, upTo int) profile.Curve {
	t.Helper()
	var pts []profile.Point
	for b := 1; b <= upTo; b++ {
		pts = append(pts, profile.Point{Batch: b, Time: base + per*time.Duration(b)})
	}
	c, err := profile.NewCurve(pts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTuneFixed(t *testing.T) {
	tests := []struct {
		name     string
		base     time.Duration
		per      time.Duration
		measured int
		rtMax    time.Duration
		maxBatch int
		wantN    int
		wantW    time.Duration
		wantRate float64
	}{
		// T_b = 20 + 5b ms, T_1 = 25 ms: W ≤ min(200, 25b) − (20 + 5b); RT_max binds at b = 36.
		{"rt_max binds", 20 * time.Millisecond, 5 * time.Millisecond, 64, 200 * time.Millisecond, 0, 36, 0, 36 / 0.2},
		// T_b = 10 + 20b ms, T_1 = 30 ms: b = 9 gives min(200, 270) − 190 = 10 ms; b = 10 takes 210 ms.
		{"per-item cost", 10 * time.Millisecond, 20 * time.Millisecond, 16, 200 * time.Millisecond, 0, 9, 10 * time.Millisecond, 9 / 0.19},
		// Capped by maxBatch = 8 (MArk's HANDLE_SIZE): W = min(200, 8·25) − 60 = 140 ms.
		{"max batch cap", 20 * time.Millisecond, 5 * time.Millisecond, 64, 200 * time.Millisecond, 8, 8, 140 * time.Millisecond, 8 / 0.06},
		// Only measured up to 4: the rule does not trust extrapolation; W = min(200, 100) − 40.
		{"measured range", 20 * time.Millisecond, 5 * time.Millisecond, 4, 200 * time.Millisecond, 0, 4, 60 * time.Millisecond, 4 / 0.04},
		// T_1 = 250 ms > RT_max: infeasible.
		{"too slow", 200 * time.Millisecond, 50 * time.Millisecond, 8, 200 * time.Millisecond, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, w, rate := TuneFixed(linearCurve(t, tt.base, tt.per, tt.measured), tt.rtMax, tt.maxBatch)
			if n != tt.wantN || w != tt.wantW || math.Abs(rate-tt.wantRate) > 1e-9*tt.wantRate {
				t.Errorf("TuneFixed (-want +got):\n-n=%d w=%v rate=%.6f\n+n=%d w=%v rate=%.6f", tt.wantN, tt.wantW, tt.wantRate, n, w, rate)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"default", func(*Config) {}, ""},
		{"no policy", func(c *Config) { c.Policy = "" }, `batching.policy: must be set, got ""`},
		{"zero slo", func(c *Config) { c.SLO = 0 }, "batching.slo: must be > 0, got 0s"},
		{"zero batch", func(c *Config) { c.MaxBatch = 0 }, "batching.max_batch: must be ≥ 1, got 0"},
		{"wait above slo", func(c *Config) { c.MaxWait = time.Second }, "batching.max_wait: must be in [0, slo=200ms], got 1s"},
		{"mlproxy dec_mult", func(c *Config) { c.Policy = PolicyMLProxy; c.MLProxy.DecMult = 1 }, "batching.mlproxy.dec_mult: must be in (0, 1), got 1"},
		{"mlproxy initial above limit", func(c *Config) { c.Policy = PolicyMLProxy; c.MaxBatch = 101 },
			"batching.max_batch: mlproxy's initial Max_BS must be in [1, 100], got 101"},
		{"mlproxy fields ignored by fixed", func(c *Config) { c.MLProxy.Interval = 0 }, ""},
		{"mlproxy interval", func(c *Config) { c.Policy = PolicyMLProxy; c.MLProxy.Interval = 0 }, "batching.mlproxy.interval: must be > 0, got 0s"},
		{"mlproxy window", func(c *Config) { c.Policy = PolicyMLProxy; c.MLProxy.WindowSamples = 0 }, "batching.mlproxy.window_samples: must be ≥ 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mutate(&c)
			err := c.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("Validate (-want +got):\n-%q\n+%q", tt.wantErr, got)
			}
		})
	}
}

func TestNewUnknown(t *testing.T) {
	c := DefaultConfig()
	c.Policy = "nope"
	if _, err := New(c); err == nil || !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("New(%q) error (-want +got): -ErrUnknownPolicy +%v", c.Policy, err)
	}
	r := Builtin()
	r["custom"] = func(cfg Config) (Policy, error) {
		return FromFunc(1, func(q Queue, now time.Time) Decision { return Decision{Reason: "custom"} }), nil
	}
	c.Policy = "custom"
	p, err := r.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Decide(Queue{}, t0).Reason; got != "custom" {
		t.Errorf("custom policy reason (-want +got): -custom +%s", got)
	}
	if got, want := len(Names()), 3; got != want {
		t.Errorf("extending a Builtin copy changed the built-ins: %d names, want %d", got, want)
	}
}

// TestTuneFixedSlots: μ*_nb counts every slot; one slot is TuneFixed.
func TestTuneFixedSlots(t *testing.T) {
	c, err := profile.NewCurve([]profile.Point{{Batch: 1, Time: 100 * time.Millisecond}, {Batch: 2, Time: 150 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	n1, w1, r1 := TuneFixed(c, 300*time.Millisecond, 0)
	if n, w, r := TuneFixedSlots(c, 300*time.Millisecond, 0, 1); n != n1 || w != w1 || r != r1 {
		t.Errorf("one slot: (%d, %v, %v), TuneFixed (%d, %v, %v)", n, w, r, n1, w1, r1)
	}
	if n, w, _ := TuneFixedSlots(c, 300*time.Millisecond, 0, 4); n != 1 || w != 0 {
		t.Errorf("four slots: N_batch %d W_batch %v, want 1 and 0 (two requests take 50 ms unbatched)", n, w)
	}
	if n, _, _ := TuneFixedSlots(c, 50*time.Millisecond, 0, 4); n != 0 {
		t.Errorf("T_1 above RT_max: N_batch %d, want 0", n)
	}
}

// TestDecideOffsetsMatchesDecide: Fixed's and None's DecideOffsets answer as their Decide on the
// times origin + offset, on random queues (ties of now with the window's end and the deadline
// included).
func TestDecideOffsetsMatchesDecide(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	origin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next := func(d Decision) int64 {
		if d.Next.IsZero() {
			return -1
		}
		return int64(d.Next.Sub(origin))
	}
	for trial := range 100000 {
		f := NewFixed(1+rng.IntN(8), time.Duration(rng.IntN(4))*time.Millisecond)
		n := rng.IntN(10)
		oldest := int64(rng.IntN(5)) * int64(time.Millisecond)
		deadline := oldest + int64(rng.IntN(5))*int64(time.Millisecond)
		now := oldest + int64(rng.IntN(6))*int64(time.Millisecond)
		q := Queue{Len: n}
		if n > 0 {
			q.Oldest, q.EarliestDeadline = origin.Add(time.Duration(oldest)), origin.Add(time.Duration(deadline))
		}
		d := f.Decide(q, origin.Add(time.Duration(now)))
		if k, nx := f.DecideOffsets(n, oldest, deadline, now); k != d.Dispatch || nx != next(d) {
			t.Fatalf("trial %d: fixed %+v on %+v at %d: offsets (%d, %d), Decide %+v", trial, *f, q, now, k, nx, d)
		}
		d = NewNone().Decide(q, origin.Add(time.Duration(now)))
		if k, nx := NewNone().DecideOffsets(n, now); k != d.Dispatch || nx != next(d) {
			t.Fatalf("trial %d: none on %+v at %d: offsets (%d, %d), Decide %+v", trial, q, now, k, nx, d)
		}
	}
}
