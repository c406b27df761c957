package keepalive

import (
	"math/rand/v2"
	"testing"
	"time"
)

// syntheticTraces are three made-up week-long per-minute traces with the shapes of the Azure
// Functions traces INFless evaluates on (seeded, so every run sees the same): bursty (runs of
// busy minutes with one- or two-minute gaps, separated by pauses of 10–90 minutes), periodic
// (a busy minute every 30 ± 2 minutes) and sporadic (each minute busy with probability 1 %).
func syntheticTraces() map[string][]int {
	const week = 7 * 24 * 60
	r := rand.New(rand.NewPCG(17, 1))
	bursty, periodic, sporadic := make([]int, week), make([]int, week), make([]int, week)
	for i := 0; i < week; {
		for n := 5 + r.IntN(30); n > 0 && i < week; n-- {
			bursty[i] = 1 + r.IntN(20)
			i += 1 + r.IntN(3)
		}
		i += 10 + r.IntN(80)
	}
	for i := r.IntN(30); i < week; i += 28 + r.IntN(5) {
		periodic[i] = 1 + r.IntN(5)
	}
	for i := range sporadic {
		if r.Float64() < 0.01 {
			sporadic[i] = 1
		}
	}
	return map[string][]int{"bursty": bursty, "periodic": periodic, "sporadic": sporadic}
}

// TestLSTHAgainstLingerHHP is LSTH's headline against the fair HHP (issue #17): HHP given the
// linger sloserve gives LSTH (NewLingerHHP). Summed over the synthetic traces: the linger alone
// makes HHP better on both counts (fewer cold starts, less idle time), and against that HHP,
// LSTH trades cold starts for idle time — 1.2–4× the cold starts, 80–100 % of the idle time —
// instead of INFless §3.5's fewer cold starts and less idle time (on the Azure traces: 116 vs
// 71 cold starts, 27,023 vs 28,523 idle minutes; docs/keepalive.md).
func TestLSTHAgainstLingerHHP(t *testing.T) {
	total := map[string]Result{}
	for name, counts := range syntheticTraces() {
		for _, r := range Compare(counts, time.Minute, Baselines()) {
			t.Logf("%-9s %-17s cold %4d idle %7.0f min", name, r.Policy, r.ColdStarts, r.IdleMinutes)
			s := total[r.Policy]
			s.ColdStarts += r.ColdStarts
			s.IdleMinutes += r.IdleMinutes
			total[r.Policy] = s
		}
	}
	for _, p := range []string{"hhp", "hhp-linger", "hhp-linger-window", "lsth"} {
		t.Logf("all       %-17s cold %4d idle %7.0f min", p, total[p].ColdStarts, total[p].IdleMinutes)
	}
	checkFairLSTH(t, total, 1.2, 4, 0.8, 1)
}

// checkFairLSTH asserts the fair keep-alive comparison on summed results: hhp-linger beats hhp
// on both counts, and LSTH's cold starts and idle time over hhp-linger's are within the bands.
func checkFairLSTH(t *testing.T, total map[string]Result, coldLo, coldHi, idleLo, idleHi float64) {
	t.Helper()
	hhp, fair, lsth := total["hhp"], total["hhp-linger"], total["lsth"]
	if fair.ColdStarts > hhp.ColdStarts || fair.IdleMinutes > hhp.IdleMinutes {
		t.Errorf("hhp-linger cold %d idle %.0f, hhp cold %d idle %.0f: want the linger better on both", fair.ColdStarts, fair.IdleMinutes, hhp.ColdStarts, hhp.IdleMinutes)
	}
	cold := float64(lsth.ColdStarts) / float64(max(fair.ColdStarts, 1))
	idle := lsth.IdleMinutes / max(fair.IdleMinutes, 1)
	if cold < coldLo || cold > coldHi || idle < idleLo || idle > idleHi {
		t.Errorf("lsth over hhp-linger: cold starts %.2f× (want [%g, %g]), idle time %.3f× (want [%g, %g])", cold, coldLo, coldHi, idle, idleLo, idleHi)
	}
}
