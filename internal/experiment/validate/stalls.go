package validate

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/sim"
)

// Whole-host stall probe (issue #16): on the shared 2-core machine the scheduler now and then
// leaves every process waiting for tens of ms at once, and the misses that makes cluster in one
// controller step (enough to trip MArk's SLO monitor live). A goroutine sleeps probeSleep over
// and over beside the profile's round trips; an oversleep above StallThreshold is a stall.
const (
	probeSleep = time.Millisecond
	// StallThreshold is the oversleep of the probe's 1 ms sleep that counts as a stall: above
	// the timer's and the scheduler's ordinary slack (tens to hundreds of µs), well under the
	// round trips it would otherwise hide among (2–3 ms at batch 1).
	StallThreshold = 5 * time.Millisecond
)

// span is an interval of wall time.
type span struct{ from, to time.Time }

func (s span) overlaps(o span) bool { return s.from.Before(o.to) && o.from.Before(s.to) }

// StallsMeasured is what the probe saw: the stall rate and the lengths (the simulator's stall
// process, sim.Stalls), and how many of the profile's round trips fell in a stall and were left
// out of the noise factors (they are the stall process's, not drawn twice).
type StallsMeasured struct {
	ProbeS      float64   `json:"probe_s"`
	ThresholdMS float64   `json:"threshold_ms"`
	RatePerS    float64   `json:"rate_per_s"`
	LengthsMS   []float64 `json:"lengths_ms"`
	// FactorsInStalls and LaunchFactorsInStalls count the round trips that overlapped a stall.
	FactorsInStalls       int `json:"factors_in_stalls"`
	LaunchFactorsInStalls int `json:"launch_factors_in_stalls"`
}

// Sim is the measured process as the simulator's (off when the probe saw no stall).
func (s StallsMeasured) Sim() sim.Stalls {
	if len(s.LengthsMS) == 0 {
		return sim.Stalls{}
	}
	st := sim.Stalls{Rate: s.RatePerS}
	for _, l := range s.LengthsMS {
		st.Lengths = append(st.Lengths, time.Duration(l*float64(time.Millisecond)))
	}
	return st
}

// String is the stall process on one line.
func (s StallsMeasured) String() string {
	if len(s.LengthsMS) == 0 {
		return fmt.Sprintf("no stall over %.0f ms in %.1f s", s.ThresholdMS, s.ProbeS)
	}
	ls := slices.Sorted(slices.Values(s.LengthsMS))
	out := fmt.Sprintf("%d stalls over %.0f ms in %.1f s (%.2f/s), length median %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms",
		len(ls), s.ThresholdMS, s.ProbeS, s.RatePerS, ls[len(ls)/2], ls[len(ls)*9/10], ls[len(ls)*99/100], ls[len(ls)-1])
	if s.FactorsInStalls+s.LaunchFactorsInStalls > 0 {
		out += fmt.Sprintf("; %d + %d round trips in stalls left out of the factors", s.FactorsInStalls, s.LaunchFactorsInStalls)
	}
	return out
}

// stallProbe is the running probe.
type stallProbe struct {
	stop   chan struct{}
	done   chan struct{}
	start  time.Time
	end    time.Time
	stalls []span // the goroutine's until done is closed
}

// startProbe starts the probe goroutine.
func startProbe() *stallProbe {
	p := &stallProbe{stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	go p.run()
	return p
}

func (p *stallProbe) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			p.end = time.Now()
			return
		default:
		}
		t0 := time.Now()
		time.Sleep(probeSleep)
		due := t0.Add(probeSleep)
		if over := time.Since(due); over > StallThreshold {
			p.stalls = append(p.stalls, span{from: due, to: due.Add(over)})
		}
	}
}

// finish stops the probe and returns its stalls and how long it ran.
func (p *stallProbe) finish() ([]span, time.Duration) {
	close(p.stop)
	<-p.done
	return p.stalls, p.end.Sub(p.start)
}

// splitStalls records the probe's stalls in m and leaves the round trips that overlapped one
// out of the noise factors (factorSpans and launchSpans run beside Factors and LaunchFactors):
// the simulator draws the stalls from its stall process, and a round trip slowed by one would
// count the same stall twice. When fewer than half the factors would be left (a machine
// stalled most of the time), they are all kept and nothing is taken out.
func (m *Measured) splitStalls(stalls []span, probe time.Duration) {
	s := stallsOf(stalls, probe)
	all, allLaunch := m.Factors, m.LaunchFactors
	var n int
	m.Factors, n = outside(m.Factors, m.factorSpans, stalls)
	s.FactorsInStalls = n
	m.LaunchFactors, n = outside(m.LaunchFactors, m.launchSpans, stalls)
	s.LaunchFactorsInStalls = n
	m.Stalls = s
	m.allFactors, m.allLaunchFactors = all, allLaunch
}

// stallsOf is the probe's stalls as a rate and lengths (in 10 µs).
func stallsOf(stalls []span, probe time.Duration) StallsMeasured {
	s := StallsMeasured{ProbeS: math.Round(probe.Seconds()*10) / 10, ThresholdMS: float64(StallThreshold) / float64(time.Millisecond)}
	for _, st := range stalls {
		s.LengthsMS = append(s.LengthsMS, math.Round(float64(st.to.Sub(st.from))/1e4)/100)
	}
	if probe > 0 {
		s.RatePerS = float64(len(stalls)) / probe.Seconds()
	}
	return s
}

// withoutStalls is the profile as the simulator took it before the stall probe: no stall
// process, every round trip in the factors.
func (m Measured) withoutStalls() Measured {
	m.Stalls = StallsMeasured{}
	if m.allFactors != nil {
		m.Factors, m.LaunchFactors = m.allFactors, m.allLaunchFactors
	}
	return m
}

// outside returns the factors whose span overlaps no stall and how many were left out, or all
// of them (and 0) when fewer than half would be left or the spans do not run beside them.
func outside(fs []float64, spans []span, stalls []span) ([]float64, int) {
	if len(spans) != len(fs) {
		return fs, 0
	}
	var kept []float64
	for i, f := range fs {
		if !slices.ContainsFunc(stalls, spans[i].overlaps) {
			kept = append(kept, f)
		}
	}
	if 2*len(kept) < len(fs) {
		return fs, 0
	}
	return kept, len(fs) - len(kept)
}
