package keepalive

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Result is what one policy cost on one trace.
type Result struct {
	// Policy names the policy.
	Policy string `json:"policy"`
	// Invocations is the number of invocations in the trace.
	Invocations int64 `json:"invocations"`
	// ActiveSteps is the number of trace steps with at least one invocation.
	ActiveSteps int `json:"active_steps"`
	// ColdStarts counts invocations that found no loaded instance.
	ColdStarts int `json:"cold_starts"`
	// ColdStartRate is ColdStarts / Invocations.
	ColdStartRate float64 `json:"cold_start_rate"`
	// IdleMinutes is the instance-time spent loaded without work (the wasted memory time of
	// Shahrad et al.), in minutes.
	IdleMinutes float64 `json:"idle_minutes"`
	// Fallbacks counts decisions in which a histogram was uncertain (standard keep-alive).
	Fallbacks int `json:"fallbacks"`
}

// Replay runs policy p over a per-step invocation trace (counts[i] invocations during step i,
// e.g. Azure Functions per-minute counts) and counts cold starts and idle instance-time. It
// follows Shahrad et al.'s simulation: one application image per function. A step's invocations
// may fall anywhere in it, so an active step keeps the image busy for the whole step; its first
// invocation is cold unless the image is loaded at the step's start, the others are warm. After
// a busy step ending at e, the policy's windows say when the image is loaded (Windows.Loaded):
// during [e+PreWarm, e+PreWarm+KeepAlive] (from e when PreWarm is 0), and during [e, e+Linger]
// too when the windows linger. The next active step starting at s is warm iff the image is
// loaded at s, and all the time it was loaded between e and s is idle (the whole keep-alive
// when it expired first). The last windows are counted up to the end of the trace. Replay is
// pure and deterministic.
func Replay(name string, counts []int, step time.Duration, p Policy) Result {
	r := Result{Policy: name}
	t0 := time.Unix(0, 0).UTC()
	end := t0.Add(time.Duration(len(counts)) * step)
	var (
		last  time.Time
		win   Windows
		began bool
	)
	for i, c := range counts {
		if c <= 0 {
			continue
		}
		t := t0.Add(time.Duration(i) * step)
		busyEnd := t.Add(step)
		r.Invocations += int64(c)
		r.ActiveSteps++
		if !began {
			r.ColdStarts++
		} else {
			gap := t.Sub(last)
			if !win.Loaded(gap) {
				r.ColdStarts++ // not (re)loaded yet, or unloaded already
			}
			r.IdleMinutes += win.loadedFor(gap).Minutes()
		}
		p.Observe(t, busyEnd)
		win = p.Windows(busyEnd)
		if strings.Contains(win.Reason, "uncertain") {
			r.Fallbacks++
		}
		last, began = busyEnd, true
	}
	if began {
		r.IdleMinutes += win.loadedFor(end.Sub(last)).Minutes()
	}
	if r.Invocations > 0 {
		r.ColdStartRate = float64(r.ColdStarts) / float64(r.Invocations)
	}
	return r
}

// maxCountSteps bounds the steps of a count trace. ReadCounts returns the trace densely (one int
// per step, missing steps zero), so the step index, not the file size, sets its memory and the
// replay's time: under the old bound of 10⁸ a 14-byte file ("5,1\n38888888,1") made 300 MB of
// zeros and took seconds, past the 10 s a Go fuzz worker allows one input (FuzzReadCounts).
// 2²² steps are 8 years of minutes or 48 days of seconds; the shared Azure Functions traces
// have 10 080.
const maxCountSteps = 1 << 22

// ReadCounts decodes a per-step count trace in the "t,count" CSV form of the shared Azure
// Functions traces ("t_min,count" header optional): t are increasing non-negative integers
// below 2²² (maxCountSteps), missing steps count zero. It returns counts indexed by step.
func ReadCounts(r io.Reader) ([]int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var out []int
	prev := -1
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		a, b, ok := strings.Cut(s, ",")
		if !ok {
			return nil, fmt.Errorf("read counts: line %d: want \"t,count\", got %q", line, s)
		}
		t, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			if line == 1 && len(out) == 0 {
				continue // header
			}
			return nil, fmt.Errorf("read counts: line %d: bad step %q", line, a)
		}
		c, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || c < 0 {
			return nil, fmt.Errorf("read counts: line %d: count must be a non-negative integer, got %q", line, b)
		}
		if t <= prev || t < 0 {
			return nil, fmt.Errorf("read counts: line %d: step %d does not increase after %d", line, t, prev)
		}
		if t >= maxCountSteps {
			return nil, fmt.Errorf("read counts: line %d: step %d is implausibly large (at most %d)", line, t, maxCountSteps-1)
		}
		out = append(out, make([]int, t-len(out))...)
		out = append(out, c)
		prev = t
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read counts: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("read counts: no rows")
	}
	return out, nil
}

// Builder makes a fresh policy for one replay.
type Builder struct {
	// Name labels the policy's results.
	Name string
	// New returns a policy with no history.
	New func() Policy
}

// Baselines returns the policies compared on the Azure traces, all with default settings:
// the fixed 10-minute keep-alive, standard HHP (whole history), HHP over the last 4 hours (the
// baseline as INFless §3.5 describes it: "tracks the idle times of a configurable duration (e.g.,
// 4 hours)"), LSTH (γ = 0.5) and LSTH with γ = 0.3 and 0.7 (INFless Fig. 16), and three
// ablations of LSTH: §3.5's formulas read literally (MixWindows), γ = 1 (the long histogram
// alone) and γ = 1 over the whole history instead of 24 h (HHP's history in LSTH's two-stage
// windows).
func Baselines() []Builder {
	hhp4 := DefaultHHPConfig()
	hhp4.History = 4 * time.Hour
	literal := DefaultLSTHConfig()
	literal.MixWindows = true
	whole := DefaultLSTHConfig()
	whole.Long, whole.Gamma = 1<<62, 1
	return []Builder{
		{"fixed-10m", func() Policy { return &Fixed{KeepAlive: DefaultFixedKeepAlive} }},
		{"hhp", func() Policy { p, _ := NewHHP(DefaultHHPConfig()); return p }},
		{"hhp-4h", func() Policy { p, _ := NewHHP(hhp4); return p }},
		{"hhp-linger", func() Policy { p, _ := NewLingerHHP(DefaultHistogramConfig()); return p }},
		{"hhp-linger-window", func() Policy { p, _ := NewHHP(LingerHHPConfig()); return p }},
		{"lsth", func() Policy { p, _ := NewLSTH(DefaultLSTHConfig()); return p }},
		{"lsth-g0.3", func() Policy { return lsthGamma(0.3) }},
		{"lsth-g0.7", func() Policy { return lsthGamma(0.7) }},
		{"lsth-literal", func() Policy { p, _ := NewLSTH(literal); return p }},
		{"lsth-g1", func() Policy { return lsthGamma(1) }},
		{"lsth-whole-g1", func() Policy { p, _ := NewLSTH(whole); return p }},
	}
}

// lsthGamma is LSTH with weight γ (INFless Fig. 16 compares γ ∈ {0.3, 0.5, 0.7}).
func lsthGamma(g float64) Policy {
	c := DefaultLSTHConfig()
	c.Gamma = g
	p, _ := NewLSTH(c)
	return p
}

// Compare replays every builder's policy over counts.
func Compare(counts []int, step time.Duration, builders []Builder) []Result {
	out := make([]Result, 0, len(builders))
	for _, b := range builders {
		out = append(out, Replay(b.Name, counts, step, b.New()))
	}
	return out
}
