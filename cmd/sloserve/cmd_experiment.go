package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/experiment"
	"github.com/sloserve/sloserve/internal/experiment/pool"
)

// The experiments join the command table as sub-verbs, each with its own help, so that
// 'sloserve experiment NAME -h' says what it prints, which doc quotes it and what data it reads.
func init() {
	verbs := append([]string{"list"}, experiment.Names()...)
	commands["experiment"] = command{"run a named experiment and print the tables the docs quote: 'experiment list', 'experiment NAME'",
		runExperiment, verbs}
	for _, e := range experiment.All() {
		helpTexts["experiment "+e.Name] = helpText{synopsis: "sloserve experiment " + e.Name + " [--root DIR] [--data DIR] [--duration D] [flags]",
			summary: e.Summary, examples: []string{"sloserve experiment " + e.Name + "   # " + e.Doc}}
	}
}

// experimentFlags are the flags every experiment takes (each uses those its help names).
type experimentFlags struct {
	o                     experiment.Options
	peaks, sets, policies string
}

// runExperiment is 'sloserve experiment list' and 'sloserve experiment NAME [flags]'.
func runExperiment(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return usagef("experiment: want 'list' or an experiment name (have %s)", strings.Join(experiment.Names(), ", "))
	}
	if isHelp(args) {
		return showHelp("experiment")
	}
	if args[0] == "list" {
		fs := flag.NewFlagSet("experiment list", flag.ContinueOnError)
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, x := range experiment.All() {
			fmt.Fprintf(tw, "%s\t%s\n", x.Name, x.Summary)
		}
		return tw.Flush()
	}
	x, err := experiment.Lookup(args[0])
	if err != nil {
		return usagef("experiment: %v", err)
	}
	o, err := parseExperimentFlags(x.Name, args[1:], e.stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := x.Run(ctx, o, e.stdout); err != nil {
		return fmt.Errorf("experiment %s: %w", x.Name, err)
	}
	fmt.Fprintf(e.stderr, "experiment %s: %.1f s\n", x.Name, time.Since(start).Seconds())
	return nil
}

// parseExperimentFlags parses an experiment's flags into its Options.
func parseExperimentFlags(name string, args []string, stderr io.Writer) (experiment.Options, error) {
	fs := flag.NewFlagSet("experiment "+name, flag.ContinueOnError)
	var f experimentFlags
	fs.StringVar(&f.o.Root, "root", ".", "repository root `dir` (docs/, examples/ and testdata/ are read from it)")
	fs.StringVar(&f.o.Data, "data", "../shared/data", "shared data `dir` (traces/, profiles/, ensembles/, prices/)")
	fs.DurationVar(&f.o.Duration, "duration", 0, "replay only this much of each trace (0: the experiment's own window)")
	fs.StringVar(&f.peaks, "peaks", "", "comma-separated peak rates, rps per function (infless-load)")
	fs.StringVar(&f.sets, "sets", "", "comma-separated trace sets to keep (infless-load: burst300, azure)")
	fs.StringVar(&f.policies, "policies", "", "comma-separated policies to keep (scoreboard, infless-*, ensemble-explore)")
	fs.Uint64Var(&f.o.Seed, "seed", 0, "override the seed (scoreboard)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parseFlags(fs, args); err != nil {
		return f.o, err
	}
	if f.o.Duration < 0 {
		return f.o, usagef("experiment %s: --duration %v must be ≥ 0", name, f.o.Duration)
	}
	for _, p := range splitList(f.peaks) {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v > 0) {
			return f.o, usagef("experiment %s: --peaks: bad peak %q", name, p)
		}
		f.o.Peaks = append(f.o.Peaks, v)
	}
	f.o.Sets, f.o.Policies = splitList(f.sets), splitList(f.policies)
	f.o.Pool = pool.New(0)
	if !*quiet {
		f.o.Progress = stderr
	}
	return f.o, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
