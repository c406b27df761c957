package trace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Trace is a workload: either a rate series — a piecewise-constant request rate, one value per
// Step — or an explicit list of arrival offsets. Arrivals turns either into a Source without
// materialising the arrivals of a rate series. Traces are immutable once built; With returns a
// transformed copy.
type Trace struct {
	// Name names the trace in Summaries (e.g. the file's base name).
	Name string
	// Step is the length of each rate step; zero for an arrival list.
	Step time.Duration
	// Rates holds the request rate of each step, in requests per second; nil for an arrival list.
	Rates []float64
	// Times holds the arrival offsets of an arrival list, non-decreasing; nil for a rate series.
	Times []time.Duration
	// End is the length of an arrival list (at least its last offset); unused for rate series.
	End time.Duration

	listScale float64 // RateScale still to apply to Times when generating (0 means 1)
}

// NewSeries returns a rate-series trace; step must be > 0 and every rate finite and ≥ 0.
func NewSeries(name string, step time.Duration, rates []float64) (*Trace, error) {
	if step <= 0 {
		return nil, fmt.Errorf("trace %s: step must be > 0, got %v", name, step)
	}
	for i, r := range rates {
		if !(r >= 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("trace %s: rate of step %d must be finite and ≥ 0, got %v", name, i, r)
		}
	}
	return &Trace{Name: name, Step: step, Rates: rates}, nil
}

// NewList returns an arrival-list trace; times must be non-negative and non-decreasing.
func NewList(name string, times []time.Duration) (*Trace, error) {
	for i, t := range times {
		if t < 0 || i > 0 && t < times[i-1] {
			return nil, fmt.Errorf("trace %s: arrival %d at %v is negative or before the previous one", name, i, t)
		}
	}
	var end time.Duration
	if len(times) > 0 {
		end = times[len(times)-1]
	}
	return &Trace{Name: name, Times: times, End: end}, nil
}

// IsSeries reports whether t is a rate series (rather than an arrival list).
func (t *Trace) IsSeries() bool { return t.Step > 0 }

// Duration returns the length of the trace.
func (t *Trace) Duration() time.Duration {
	if t.IsSeries() {
		return time.Duration(len(t.Rates)) * t.Step
	}
	return t.End
}

// Expected returns the expected number of arrivals: Σ rate·step, or the scaled list length.
func (t *Trace) Expected() float64 {
	if !t.IsSeries() {
		return float64(len(t.Times)) * t.scale()
	}
	var s float64
	for _, r := range t.Rates {
		s += r
	}
	return s * t.Step.Seconds()
}

// MeanRate returns Expected / Duration in requests per second (0 for an empty trace).
func (t *Trace) MeanRate() float64 {
	d := t.Duration().Seconds()
	if d <= 0 {
		return 0
	}
	return t.Expected() / d
}

// MaxRate returns the highest step rate of a rate series (0 for an arrival list).
func (t *Trace) MaxRate() float64 {
	var m float64
	for _, r := range t.Rates {
		m = max(m, r)
	}
	return m
}

func (t *Trace) scale() float64 {
	if t.listScale == 0 {
		return 1
	}
	return t.listScale
}

// Options transform a trace. TimeScale applies first, then the window (in scaled time), then
// RateScale.
type Options struct {
	// RateScale multiplies the request rate; 0 means 1. For a rate series every step's rate is
	// multiplied; for an arrival list each arrival is kept with probability RateScale (< 1) or
	// repeated ⌊RateScale⌋ or ⌈RateScale⌉ times spread over the gap to the next one (> 1),
	// decided by the seed given to Arrivals. Must be ≥ 0 and finite.
	RateScale float64
	// TimeScale stretches time: an offset t becomes t·TimeScale with the same number of arrivals,
	// so rates are divided by it (0.5 replays a trace twice as fast). 0 means 1. Must be ≥ 0.
	TimeScale float64
	// From and To cut the window [From, To) of the time-scaled trace; To = 0 means its end. A
	// rate series is cut at whole steps: From rounds down and To up to a step boundary.
	From, To time.Duration
}

// Validate reports the first option that is out of range.
func (o Options) Validate() error {
	switch {
	case !(o.RateScale >= 0) || math.IsInf(o.RateScale, 0):
		return fmt.Errorf("trace options: rate scale must be finite and ≥ 0, got %v", o.RateScale)
	case !(o.TimeScale >= 0) || math.IsInf(o.TimeScale, 0):
		return fmt.Errorf("trace options: time scale must be finite and ≥ 0, got %v", o.TimeScale)
	case o.From < 0:
		return fmt.Errorf("trace options: window start must be ≥ 0, got %v", o.From)
	case o.To != 0 && o.To <= o.From:
		return fmt.Errorf("trace options: window end %v must be after its start %v", o.To, o.From)
	}
	return nil
}

// With returns a copy of t transformed by o.
func (t *Trace) With(o Options) (*Trace, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rs, ts := o.RateScale, o.TimeScale
	if rs == 0 {
		rs = 1
	}
	if ts == 0 {
		ts = 1
	}
	out := &Trace{Name: t.Name, listScale: t.listScale}
	if t.IsSeries() {
		out.Step = time.Duration(float64(t.Step) * ts)
		if out.Step <= 0 {
			return nil, fmt.Errorf("trace %s: time scale %v makes the step %v vanish", t.Name, ts, t.Step)
		}
		first := int(o.From / out.Step)
		last := len(t.Rates)
		if o.To > 0 {
			last = min(last, int((o.To+out.Step-1)/out.Step))
		}
		first = min(first, last)
		out.Rates = make([]float64, last-first)
		for i := range out.Rates {
			out.Rates[i] = t.Rates[first+i] / ts * rs
		}
		return out, nil
	}
	end := time.Duration(float64(t.End) * ts)
	lo, hi := o.From, end
	if o.To > 0 && o.To < hi {
		hi = o.To
	}
	times := make([]time.Duration, 0, len(t.Times))
	for _, x := range t.Times {
		x = time.Duration(float64(x) * ts)
		if x >= lo && (x < hi || o.To == 0 && x == hi) {
			times = append(times, x-lo)
		}
	}
	out.Times = times
	out.End = max(hi-lo, 0)
	out.listScale = t.scale() * rs
	return out, nil
}

// Arrivals returns the trace's arrivals as a Source, deterministic for seed (PCG). A rate series
// yields a Poisson process within each step (exact for a piecewise-constant rate: the
// exponential gap is memoryless, so a gap crossing a step boundary restarts there); an arrival
// list yields its offsets (thinned or repeated as RateScale says).
func (t *Trace) Arrivals(seed uint64) Source {
	if t.IsSeries() {
		return &seriesSource{rates: t.Rates, step: t.Step, rng: newRand(seed)}
	}
	s := &listSource{times: t.Times, end: t.End, scale: t.scale()}
	if s.scale != 1 {
		s.rng = newRand(seed)
	}
	return s
}

type seriesSource struct {
	rates []float64
	step  time.Duration
	rng   *rand.Rand
	k     int           // current step
	t     time.Duration // current time
}

func (s *seriesSource) Next() (time.Duration, bool) {
	for s.k < len(s.rates) {
		r := s.rates[s.k]
		stepEnd := time.Duration(s.k+1) * s.step
		if r > 0 {
			g := s.rng.ExpFloat64() / r * 1e9
			if g < float64(stepEnd-s.t) {
				s.t += time.Duration(g)
				return s.t, true
			}
		}
		s.t = stepEnd
		s.k++
	}
	return 0, false
}

type listSource struct {
	times  []time.Duration
	end    time.Duration
	scale  float64
	rng    *rand.Rand
	i      int           // next original arrival
	copies int           // copies of times[i-1] still to emit
	total  int           // copies of times[i-1] decided
	base   time.Duration // times[i-1]
	gap    time.Duration // to times[i] (or end)
}

func (s *listSource) Next() (time.Duration, bool) {
	if s.scale == 1 {
		if s.i >= len(s.times) {
			return 0, false
		}
		s.i++
		return s.times[s.i-1], true
	}
	for s.copies == 0 {
		if s.i >= len(s.times) {
			return 0, false
		}
		whole, frac := math.Modf(s.scale)
		n := int(whole)
		if s.rng.Float64() < frac {
			n++
		}
		s.base = s.times[s.i]
		s.i++
		next := s.end
		if s.i < len(s.times) {
			next = s.times[s.i]
		}
		s.gap = max(next-s.base, 0)
		s.copies, s.total = n, n
	}
	k := s.total - s.copies
	s.copies--
	return s.base + time.Duration(float64(s.gap)*float64(k)/float64(s.total)), true
}

// Counts bins a Source's arrivals into steps of width step over [0, d), for comparing a
// generated trace with its rates; it consumes src.
func Counts(src Source, step, d time.Duration) []int {
	n := int((d + step - 1) / step)
	out := make([]int, n)
	for {
		at, ok := src.Next()
		if !ok || at >= d {
			return out
		}
		out[at/step]++
	}
}
