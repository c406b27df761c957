package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/keepalive"
)

// keepaliveResult is one policy's replay of one trace, as printed by 'keepalive replay --json'.
type keepaliveResult struct {
	Trace string `json:"trace"`
	keepalive.Result
}

// runKeepalive replays per-minute invocation traces through the keep-alive policies
// ('keepalive replay --trace F [--trace F ...]') and prints cold starts and idle instance-time.
func runKeepalive(ctx context.Context, args []string, e env) error {
	if isHelp(args) {
		return showHelp("keepalive")
	}
	if len(args) == 0 || args[0] != "replay" {
		return usagef("keepalive: want subcommand replay (sloserve keepalive replay --trace FILE ...)")
	}
	fs := flag.NewFlagSet("keepalive replay", flag.ContinueOnError)
	var traces keepaliveTraces
	fs.Var(&traces, "trace", "per-step count trace `file` (t,count CSV); repeatable; globs allowed")
	step := fs.Duration("step", time.Minute, "duration of one trace step")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *step <= 0 {
		return usagef("keepalive replay: --step %v must be > 0", *step)
	}
	if len(traces) == 0 {
		traces = keepaliveTraces{"../shared/data/traces/azure-functions/fn*.rpm.csv"}
	}
	var files []string
	for _, t := range traces {
		m, err := filepath.Glob(t)
		if err != nil || len(m) == 0 {
			return usagef("keepalive replay: --trace %q matches no file", t)
		}
		files = append(files, m...)
	}
	var out []keepaliveResult
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		fh, err := os.Open(f)
		if err != nil {
			return usagef("keepalive replay: --trace: %v", err)
		}
		counts, err := keepalive.ReadCounts(fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if int64(len(counts)) > math.MaxInt64/int64(*step) {
			return usagef("keepalive replay: --step %v × %d steps of %s exceeds the 292 years a duration holds", *step, len(counts), f)
		}
		for _, r := range keepalive.Compare(counts, *step, keepalive.Baselines()) {
			out = append(out, keepaliveResult{Trace: filepath.Base(f), Result: r})
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trace\tpolicy\tinvocations\tcold starts\tcold rate\tidle min\t")
	for _, r := range out {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.4f\t%.0f\t\n", r.Trace, r.Policy, r.Invocations, r.ColdStarts, r.ColdStartRate, r.IdleMinutes)
	}
	return tw.Flush()
}

// keepaliveTraces collects a repeatable string flag.
type keepaliveTraces []string

func (m *keepaliveTraces) String() string     { return fmt.Sprint(*m) }
func (m *keepaliveTraces) Set(v string) error { *m = append(*m, v); return nil }
