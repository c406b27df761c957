package infless

import (
	"math"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
)

// ssd's fastest b = 1 configuration (2 threads + 40 % GPU, 125.9 ms) with the +10 % offset, at
// its 200 ms SLO: t_exec > t_slo/2, so Eq. 1's r_low as printed (⌈1/(t_slo − t_exec)⌉ = 17)
// exceeds r_up (⌊1/t_exec⌋ = 7).
const ssdExec = 138490 * time.Microsecond

func TestPooledRate(t *testing.T) {
	slack := 200*ms - ssdExec
	// One instance: the exact M/D/1 answer is the λ with (1 − λt)·e^{λ·slack} = 0.95.
	md1 := 0.0
	for lo, hi, k := 0.0, 1/ssdExec.Seconds(), 0; k < 60; k++ {
		md1 = (lo + hi) / 2
		if (1-md1*ssdExec.Seconds())*math.Exp(md1*slack.Seconds()) >= 0.95 {
			lo = md1
		} else {
			hi = md1
		}
	}
	if got := PooledRate(1, ssdExec, slack, 0.95); !(got > 0.8*md1 && got <= md1) {
		t.Errorf("PooledRate(1) = %.3f/s, want within 20 %% below the exact M/D/1 %.3f/s", got, md1)
	}
	prev := 0.0
	for n := 1; n <= 64; n *= 2 {
		got := PooledRate(n, ssdExec, slack, 0.95) / float64(n)
		if got <= prev || got >= 1/ssdExec.Seconds() {
			t.Errorf("PooledRate(%d)/%d = %.3f/s: want above %.3f (pooling) and below saturation %.3f", n, n, got, prev, 1/ssdExec.Seconds())
		}
		prev = got
	}
	if got := PooledRate(4, ssdExec, slack, 1); got != 0 {
		t.Errorf("target 1: PooledRate = %v, want 0", got)
	}
}

func TestRateBoundsTarget(t *testing.T) {
	eq1 := func(b int, exec, slo time.Duration) Bounds { bd, _ := RateBounds(b, exec, slo); return bd }
	tests := []struct {
		name   string
		b      int
		exec   time.Duration
		target float64
		n      int
		want   Bounds
		ok     bool
	}{
		{"t_exec ≤ t_slo/2: Eq. 1", 1, 90 * ms, 0.95, 1, eq1(1, 90*ms, 200*ms), true},
		{"b > 1: Eq. 1", 2, 90 * ms, 0.95, 1, eq1(2, 90*ms, 200*ms), true},
		{"target 0: Eq. 1", 1, ssdExec, 0, 1, eq1(1, ssdExec, 200*ms), true},
		{"slack-limited, one instance", 1, ssdExec, 0.95, 1, Bounds{Up: PooledRate(1, ssdExec, 200*ms-ssdExec, 0.95)}, true},
		{"slack-limited, eight share the pool", 1, ssdExec, 0.95, 8, Bounds{Up: PooledRate(8, ssdExec, 200*ms-ssdExec, 0.95) / 8}, true},
		{"target 1 is infeasible", 1, ssdExec, 1, 1, Bounds{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := RateBoundsTarget(tc.b, tc.exec, 200*ms, tc.target, tc.n)
			if ok != tc.ok || math.Abs(got.Low-tc.want.Low) > 1e-9 || math.Abs(got.Up-tc.want.Up) > 1e-9 {
				t.Errorf("RateBoundsTarget = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSchedulePooledNoOvershoot: with a target, Alg. 1 places SlackLimited instances until their
// pooled R_max covers the residual, and no more — each placement adds PooledRate(n+1) −
// PooledRate(n), not the first instance's small share (which placed ~180 instances for 100 rps).
func TestSchedulePooledNoOvershoot(t *testing.T) {
	pred := func(b int, r cluster.Resources) (time.Duration, bool) { return 125900 * time.Microsecond, b == 1 }
	cfg := Config{SLO: 200 * ms, Batches: []int{1}, Resources: []cluster.Resources{{CPU: 2, GPU: 10}}, Offset: DefaultOffset, Metric: MetricShare, Target: 0.95}
	for _, load := range []float64{0.3, 5, 100} {
		c := cluster.New(64, cluster.Resources{CPU: 16, GPU: 100})
		res, err := Schedule(c, load, cfg, pred)
		if err != nil {
			t.Fatal(err)
		}
		n := len(res.Placements)
		exec := res.Placements[0].Exec
		if got := PooledRate(n, exec, cfg.SLO-exec, cfg.Target); got < load {
			t.Errorf("load %v: %d instances take %.2f/s", load, n, got)
		}
		if n > 1 && PooledRate(n-1, exec, cfg.SLO-exec, cfg.Target) >= load {
			t.Errorf("load %v: %d instances, but %d already take %.2f/s", load, n, n-1, PooledRate(n-1, exec, cfg.SLO-exec, cfg.Target))
		}
		t.Logf("load %v/s: %d instances", load, n)
	}
}

// TestPooledRateTwoStepsPerPass: pooledRateFrom's bisection, two steps per pass, returns exactly
// (bit for bit) what the one-step bisection it replaced returned, warm-started or not, and
// PoolMemo returns PooledRate's answer.
func TestPooledRateTwoStepsPerPass(t *testing.T) {
	oneStep := func(n int, exec, slack time.Duration, target, lo float64) float64 {
		d, x := exec.Seconds(), math.Max(slack.Seconds(), 0)
		e := erlangMiss{n: n, d: d, x: x}
		hi := float64(n) / d
		if !(lo >= 0 && lo < hi && e.at(lo) <= 1-target) {
			lo = 0
		}
		for hi-lo > 1e-4*hi {
			if mid := (lo + hi) / 2; e.at(mid) <= 1-target {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	var memo PoolMemo
	for _, n := range []int{1, 2, 7, 64, 300} {
		for _, exec := range []time.Duration{126 * time.Millisecond, 138 * time.Millisecond, 180 * time.Millisecond} {
			for _, target := range []float64{0.9, 0.95, 0.99} {
				slack := 200*time.Millisecond - exec
				want := oneStep(n, exec, slack, target, 0)
				if got := PooledRate(n, exec, slack, target); got != want {
					t.Errorf("PooledRate(%d, %v, %v, %v) = %v, want %v", n, exec, slack, target, got, want)
				}
				if got := memo.PooledRate(n, exec, slack, target); got != want {
					t.Errorf("PoolMemo.PooledRate(%d, %v) = %v, want %v", n, exec, got, want)
				}
				lo := 0.8 * want
				if got, w := pooledRateFrom(n+1, exec, slack, target, lo), oneStep(n+1, exec, slack, target, lo); got != w {
					t.Errorf("pooledRateFrom(%d, %v, lo %v) = %v, want %v", n+1, exec, lo, got, w)
				}
			}
		}
	}
}
