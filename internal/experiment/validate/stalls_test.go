package validate

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestSplitStalls: the round trips that overlap a probe stall leave the factors (the stall
// process makes them), the rest stay; the rate is stalls per probe second; with fewer than
// half left, every factor stays; withoutStalls restores the model before the probe.
func TestSplitStalls(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(a, b int) span {
		return span{from: t0.Add(time.Duration(a) * time.Millisecond), to: t0.Add(time.Duration(b) * time.Millisecond)}
	}
	m := Measured{Factors: []float64{1, 5, 1.1, 0.9}, factorSpans: []span{ms(0, 3), ms(20, 40), ms(40, 43), ms(60, 62)},
		LaunchFactors: []float64{1, 8}, launchSpans: []span{ms(100, 103), ms(118, 140)}}
	stalls := []span{ms(25, 35), ms(130, 150)}
	m.splitStalls(stalls, 2*time.Second)
	if want := []float64{1, 1.1, 0.9}; !slices.Equal(m.Factors, want) {
		t.Errorf("factors (-want +got): -%v +%v", want, m.Factors)
	}
	if want := []float64{1}; !slices.Equal(m.LaunchFactors, want) {
		t.Errorf("launch factors (-want +got): -%v +%v", want, m.LaunchFactors)
	}
	st := m.Stalls
	if st.RatePerS != 1 || !slices.Equal(st.LengthsMS, []float64{10, 20}) || st.FactorsInStalls != 1 || st.LaunchFactorsInStalls != 1 {
		t.Errorf("stalls %+v: want 1/s, lengths [10 20] ms, one factor and one launch factor left out", st)
	}
	sim := st.Sim()
	if sim.Rate != 1 || !slices.Equal(sim.Lengths, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}) {
		t.Errorf("sim stalls %+v", sim)
	}
	old := m.withoutStalls()
	if old.Stalls.Sim().Rate != 0 || !slices.Equal(old.Factors, []float64{1, 5, 1.1, 0.9}) || !slices.Equal(old.LaunchFactors, []float64{1, 8}) {
		t.Errorf("without stalls: %+v", old)
	}
	// A machine stalled most of the time: fewer than half would be left, so all stay.
	m = Measured{Factors: []float64{1, 2, 3}, factorSpans: []span{ms(0, 10), ms(10, 20), ms(30, 40)}}
	m.splitStalls([]span{ms(5, 15)}, time.Second)
	if len(m.Factors) != 3 || m.Stalls.FactorsInStalls != 0 {
		t.Errorf("mostly stalled: factors %v, %d left out; want all kept", m.Factors, m.Stalls.FactorsInStalls)
	}
	if (StallsMeasured{}).Sim().Rate != 0 {
		t.Error("no stall seen: the stall process must be off")
	}
}

// TestProbeSeesAStall: with one P, a goroutine that spins for 60 ms holds the probe's timer
// goroutine off until the scheduler preempts it (10 ms): the probe records a stall of ≥ 5 ms.
func TestProbeSeesAStall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := startProbe()
	time.Sleep(10 * time.Millisecond)
	for end := time.Now().Add(60 * time.Millisecond); time.Now().Before(end); {
	}
	time.Sleep(10 * time.Millisecond)
	stalls, d := p.finish()
	if d < 80*time.Millisecond || len(stalls) == 0 {
		t.Fatalf("probe ran %v and saw %d stalls; want ≥ 80 ms and a stall", d, len(stalls))
	}
	for _, s := range stalls {
		if l := s.to.Sub(s.from); l <= StallThreshold {
			t.Errorf("a stall of %v, not over the %v threshold", l, StallThreshold)
		}
	}
}
