package validate

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/trace"
)

// Segment is a window of a trace file replayed by a validation: Length of trace time from From,
// compressed into Options.Wall and scaled so that its busiest trace minute runs at 80 % of the
// fleet's nominal capacity.
type Segment struct {
	// Name names the segment in the Results (the Summary's trace).
	Name string
	// Path is the trace file (internal/trace.Open reads it).
	Path string
	// From and Length cut the window, in the trace's own time; Length 0 means to the end.
	From, Length time.Duration
}

// Built-in segment names.
const (
	SegmentTwitter    = "twitter"
	SegmentAzureBurst = "azure-burst"
)

// BuiltinSegments are the named segments, with paths under root (the repository's root): 30
// minutes of the Twitter trace of 25 May 2017 from 20:00 (the committed excerpt, BATCH's and
// MArk's trace) and 20 minutes of an Azure Functions burst (INFless's burst300-3, from
// ../shared/data: a ramp from ~20 to ~220 rps and a second peak).
func BuiltinSegments(root string) map[string]Segment {
	return map[string]Segment{
		SegmentTwitter: {Name: SegmentTwitter, Path: filepath.Join(root, "testdata/traces/twitter-2017-05-25-2000-30min.rps.csv"),
			Length: 30 * time.Minute},
		SegmentAzureBurst: {Name: SegmentAzureBurst, Path: filepath.Join(root, "../shared/data/traces/azure-functions/burst300-3.csv"),
			From: 5 * time.Minute, Length: 20 * time.Minute},
	}
}

// ParseSegments resolves a comma-separated list of segment names (BuiltinSegments) or
// name=path[@from+length] specs, e.g. "twitter,mine=trace.csv@10m+5m".
func ParseSegments(list, root string) ([]Segment, error) {
	builtin := BuiltinSegments(root)
	var out []Segment
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if s, ok := builtin[item]; ok {
			out = append(out, s)
			continue
		}
		name, spec, ok := strings.Cut(item, "=")
		if !ok || name == "" || spec == "" {
			return nil, fmt.Errorf("traces: %q is neither a built-in segment (twitter, azure-burst) nor name=path[@from+length]", item)
		}
		s := Segment{Name: name, Path: spec}
		if path, window, ok := strings.Cut(spec, "@"); ok {
			s.Path = path
			from, length, ok := strings.Cut(window, "+")
			var err1, err2 error
			s.From, err1 = time.ParseDuration(from)
			s.Length, err2 = time.ParseDuration(length)
			if !ok || err1 != nil || err2 != nil || s.From < 0 || s.Length <= 0 {
				return nil, fmt.Errorf("traces: %q: the window must be @from+length, e.g. @10m+5m", item)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// Replay is a segment made ready for both sides: its arrival offsets (wall time), the time
// compression and the controller unit (the papers' minute on the compressed clock).
type Replay struct {
	Name        string
	Times       []time.Duration
	Compression float64
	Unit        time.Duration
	// Wall is the replay's length (the segment's length over the compression).
	Wall time.Duration
	// RateScale is the factor applied to the compressed rates (after compression).
	RateScale float64
}

// Arrivals reads the segment and returns its replay for o: the window compressed into o.Wall,
// its busiest trace minute scaled to 80 % of o.MaxInstances × o.WorkerRPS, Poisson within each
// step, deterministic for o.Seed.
func (s Segment) Arrivals(o Options) (Replay, error) {
	t, err := trace.Open(s.Path)
	if err != nil {
		return Replay{}, fmt.Errorf("validate: traces: segment %s: %w", s.Name, err)
	}
	if !t.IsSeries() {
		return Replay{}, fmt.Errorf("validate: traces: segment %s: %s is an arrival list, want a rate series", s.Name, s.Path)
	}
	length := s.Length
	if length == 0 {
		length = t.Duration() - s.From
	}
	if s.From+length > t.Duration() || length <= 0 {
		return Replay{}, fmt.Errorf("validate: traces: segment %s: window %v+%v is past the trace's %v", s.Name, s.From, length, t.Duration())
	}
	// The controller's unit (the papers' minute) in whole seconds, a multiple of the 1 s sample
	// interval; the compression follows from it, so the replay lasts about o.Wall.
	unit := max(2*time.Second, time.Duration(float64(time.Minute)*float64(o.Wall)/float64(length)).Round(time.Second))
	c := float64(time.Minute) / float64(unit)
	wall := time.Duration(float64(length) / c)
	win, err := t.With(trace.Options{TimeScale: 1 / c, From: time.Duration(float64(s.From) / c), To: time.Duration(float64(s.From+length) / c)})
	if err != nil {
		return Replay{}, fmt.Errorf("validate: traces: segment %s: %w", s.Name, err)
	}
	peak := peakMean(win.Rates, max(1, int(unit/win.Step)))
	if peak <= 0 {
		return Replay{}, fmt.Errorf("validate: traces: segment %s: no requests in the window", s.Name)
	}
	scale := 0.8 * float64(o.MaxInstances) * o.WorkerRPS / peak
	win, err = win.With(trace.Options{RateScale: scale})
	if err != nil {
		return Replay{}, err
	}
	src := trace.Until(win.Arrivals(o.Seed), wall)
	r := Replay{Name: s.Name, Compression: c, Unit: unit, Wall: wall, RateScale: scale}
	for at := range trace.Seq(src) {
		r.Times = append(r.Times, at)
	}
	return r, nil
}

// peakMean is the largest mean of n consecutive rates.
func peakMean(rates []float64, n int) float64 {
	best := 0.0
	for i := 0; i < len(rates); i += n {
		sum := 0.0
		for _, r := range rates[i:min(i+n, len(rates))] {
			sum += r
		}
		best = max(best, sum/float64(n))
	}
	return best
}

// source replays a list of offsets.
func source(times []time.Duration) trace.Source {
	i := 0
	return trace.SourceFunc(func() (time.Duration, bool) {
		if i == len(times) {
			return 0, false
		}
		i++
		return times[i-1], true
	})
}
