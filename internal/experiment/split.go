package experiment

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/trace"
)

// The tuning discipline (docs/EVALUATION.md rule 2, issue #17): every trace has a tuning part,
// on which baselines are tuned and defaults chosen, and an evaluation part, on which claims are
// made. This is the one place the parts are defined.
//
//   - Azure Functions per-minute traces (azure-functions/fn*.rpm.csv, 7 days): days 1–3 tune,
//     days 4–7 evaluate.
//   - Every other trace (the Twitter day and its 30-minute excerpts, the burst300 series, a
//     synthetic trace): the first half tunes, the second half evaluates.

// azureTuningDays is the Azure traces' tuning part: days 1–3 of 7.
const azureTuningDays = 3

// TracePart is one part of a trace: its window of the (time-scaled) trace.
type TracePart struct {
	Part     tune.Part
	From, To time.Duration
}

// SplitTrace returns the tuning and evaluation windows of the trace named name (its path under
// the trace directory, e.g. "azure-functions/fn4.rpm.csv") of total length total. d > 0 caps each
// part at its first d (the scoreboard's --duration).
func SplitTrace(name string, total, d time.Duration) (tuning, evaluation TracePart, err error) {
	if total <= 0 {
		return TracePart{}, TracePart{}, fmt.Errorf("split %s: empty trace", name)
	}
	cut := total / 2
	base := path.Base(name)
	if strings.HasPrefix(base, "fn") && strings.HasSuffix(base, ".rpm.csv") && total > azureTuningDays*24*time.Hour {
		cut = azureTuningDays * 24 * time.Hour
	}
	tuning = TracePart{Part: tune.Tuning, From: 0, To: cut}
	evaluation = TracePart{Part: tune.Evaluation, From: cut, To: total}
	if d > 0 {
		tuning.To = min(tuning.To, tuning.From+d)
		evaluation.To = min(evaluation.To, evaluation.From+d)
	}
	return tuning, evaluation, nil
}

// Cut returns tr's window p (offsets rebased to 0).
func (p TracePart) Cut(tr *trace.Trace) (*trace.Trace, error) {
	out, err := tr.With(trace.Options{From: p.From, To: p.To})
	if err != nil {
		return nil, fmt.Errorf("%s part of %s: %w", p.Part, tr.Name, err)
	}
	return out, nil
}

// Split cuts tr (already rescaled) into its tuning and evaluation traces (SplitTrace's windows).
func Split(name string, tr *trace.Trace, d time.Duration) (tuning, evaluation *trace.Trace, parts [2]TracePart, err error) {
	tp, ep, err := SplitTrace(name, tr.Duration(), d)
	if err != nil {
		return nil, nil, parts, err
	}
	if tuning, err = tp.Cut(tr); err != nil {
		return nil, nil, parts, err
	}
	if evaluation, err = ep.Cut(tr); err != nil {
		return nil, nil, parts, err
	}
	return tuning, evaluation, [2]TracePart{tp, ep}, nil
}

// TraceDigest returns a short digest of a trace's contents (its steps and rates, or arrival
// times), for cache keys.
func TraceDigest(tr *trace.Trace) string {
	h := sha256.New()
	fmt.Fprint(h, tr.Step, tr.End, len(tr.Rates), len(tr.Times), tr.Expected())
	b := make([]byte, 8)
	for _, r := range tr.Rates {
		binary.LittleEndian.PutUint64(b, math.Float64bits(r))
		h.Write(b)
	}
	for _, t := range tr.Times {
		binary.LittleEndian.PutUint64(b, uint64(t))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
