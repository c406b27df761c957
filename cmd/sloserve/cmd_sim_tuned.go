package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sloserve/sloserve/internal/experiment"
	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// The tuned baselines of `sloserve sim --trace T --policy all|NAME-tuned` (issue #17): each is
// tuned on the first half of T (or on --tuning FILE) and run on T like every other policy.

// tunedCacheDir is where tuned and scoreboard runs are cached (ignored by git).
const tunedCacheDir = ".cache/tune"

// tunedNames lists the tuned baselines' names.
func tunedNames() []string {
	var out []string
	for _, b := range experiment.DefaultTunedBaselines() {
		out = append(out, b.Name)
	}
	return out
}

// splitTuned separates the tuned baselines from the registered policies in names (all: every
// tuned baseline too).
func splitTuned(names []string, all bool) (policies []string, tuned []experiment.TunedBaseline) {
	for _, b := range experiment.DefaultTunedBaselines() {
		if all || contains(names, b.Name) {
			tuned = append(tuned, b)
		}
	}
	for _, n := range names {
		if !strings.HasSuffix(n, "-tuned") {
			policies = append(policies, n)
		}
	}
	return policies, tuned
}

// openCache returns the run cache under .cache/tune salted with this binary's digest, or a
// memory-only cache with --no-cache (or when the binary cannot be read).
func openCache(off bool) *tune.Cache {
	salt, err := tune.ExecutableSalt()
	if off || err != nil {
		return tune.NewCache("", "")
	}
	return tune.NewCache(tunedCacheDir, salt)
}

// tuningTrace returns --tuning scaled as --trace was (the same rate factor), or the first half
// of tr.
func (f simFlags) tuningTrace(tr *trace.Trace) (*trace.Trace, error) {
	if f.tuningPath == "" {
		return tr.With(trace.Options{To: tr.Duration() / 2})
	}
	t, err := trace.Open(f.tuningPath)
	if err != nil {
		return nil, usagef("sim: --tuning: %v", err)
	}
	scale := f.rateScale
	if f.maxRPS > 0 {
		raw, err := trace.Open(f.tracePath)
		if err != nil || raw.MaxRate() <= 0 {
			return nil, usagef("sim: --tuning: --max-rps needs --trace's peak")
		}
		scale = f.maxRPS / raw.MaxRate()
	}
	if t, err = t.With(trace.Options{RateScale: scale}); err != nil {
		return nil, usagef("sim: --tuning: %v", err)
	}
	return t, nil
}

// simulateTuned tunes each tuned baseline on o.tuning and runs it on the whole trace; a
// baseline whose policy cannot run on the model is noted on stderr and left out.
func simulateTuned(ctx context.Context, o simOptions, stderr io.Writer) ([]slo.Summary, error) {
	if len(o.tuned) == 0 {
		return nil, nil
	}
	cfg := o.cfg
	cfg.SeriesPeriod = 0
	if cfg.Trace == "" {
		cfg.Trace = o.tr.Name
	}
	key := fmt.Sprintf("sim|%s|config %s|trace %s|tuning %s|slo %v@%v|seed %d|noise %v", cfg.Trace, o.configDigest,
		experiment.TraceDigest(o.tr), experiment.TraceDigest(o.tuning), cfg.SLO.Threshold, cfg.SLO.Target, cfg.Seed, cfg.NoiseCV)
	w := experiment.World{Config: cfg, Catalog: &o.cat, Model: o.model, Decoder: o.decoder, Key: key, Cache: o.cache}
	tp := experiment.TracePart{Part: tune.Tuning, To: o.tuning.Duration()}
	ep := experiment.TracePart{Part: tune.Evaluation, To: o.tr.Duration()}
	runs, errs := make([]experiment.TunedRun, len(o.tuned)), make([]error, len(o.tuned))
	for _, g := range experiment.TwinGroups(o.tuned) { // twins run together (experiment.RunTogether)
		bs := make([]experiment.TunedBaseline, len(g))
		for k, i := range g {
			bs[k] = o.tuned[i]
		}
		rs, es := w.RunTogether(ctx, bs, o.tuning, o.tr, tp, ep)
		for k, i := range g {
			runs[i], errs[i] = rs[k], es[k]
		}
	}
	var out []slo.Summary
	for i, b := range o.tuned {
		r, err := runs[i], errs[i]
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("sim: %w", ctx.Err())
			}
			fmt.Fprintf(stderr, "sim: skipped %s: %v\n", b.Name, err)
			continue
		}
		fmt.Fprintf(stderr, "sim: %s: %s (tuning part: %.2f %% at $%.4f, %d runs)\n", b.Name, r.Search.Options.Key(),
			100*r.Search.Tuning.Attainment, r.Search.Tuning.Cost, r.Search.Runs)
		out = append(out, r.Summary)
	}
	return out, nil
}

// scoreSettingNames lists the scoreboard's settings.
func scoreSettingNames() []string {
	var out []string
	for _, st := range experiment.DefaultScoreSettings() {
		out = append(out, st.Name)
	}
	return out
}

// scoreSetting returns the scoreboard setting named name.
func scoreSetting(name string) (experiment.ScoreSetting, bool) {
	for _, st := range experiment.DefaultScoreSettings() {
		if st.Name == name {
			return st, true
		}
	}
	return experiment.ScoreSetting{}, false
}
