package main

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/experiment/validate"
	"github.com/sloserve/sloserve/internal/slo"
)

// runValidate is `sloserve validate`: the simulator against the live stack on the same trace
// segments, policies, options and seed (internal/experiment/validate, docs/validate.md).
func runValidate(ctx context.Context, args []string, e env) error {
	o, asJSON, verbose, err := parseValidateFlags(args)
	if err != nil {
		return err
	}
	o.Progress = e.stderr
	if verbose {
		o.Log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	rep, err := validate.Run(ctx, o)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if rep.Results == nil {
			rep.Results = []validate.Result{}
		}
		return enc.Encode(rep.Results)
	}
	validate.Print(e.stdout, rep)
	return nil
}

// parseValidateFlags parses and checks the flags of `sloserve validate`; a bad one is a usage
// error naming it.
func parseValidateFlags(args []string) (o validate.Options, asJSON, verbose bool, err error) {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	jsonFlag := fs.Bool("json", false, "print an array of {policy, trace, live: Summary, sim: Summary}")
	policies := fs.String("policies", strings.Join(validate.Policies, ","), "comma-separated controller `policies`")
	traces := fs.String("traces", validate.SegmentTwitter+","+validate.SegmentAzureBurst, "comma-separated trace `segments`: twitter, azure-burst, or name=path[@from+length]")
	dur := fs.Duration("duration", validate.DefaultWall, "wall time of each live replay (the segment is compressed into it)")
	model := fs.String("model", validate.DefaultModel, "bundled `model` to serve")
	workerRPS := fs.Float64("worker-rps", validate.DefaultWorkerRPS, "nominal `rate` one worker serves (requests/s), both sides plan with it")
	maxInst := fs.Int("max-instances", validate.DefaultMax, "largest fleet (the segment's peak is scaled to 80 % of it)")
	sloMS := fs.Float64("slo-ms", float64(validate.DefaultSLO/time.Millisecond), "latency SLO threshold in `ms` (target 0.98)")
	seed := fs.Uint64("seed", validate.DefaultSeed, "seed of the arrivals and the simulator")
	serverless := fs.Bool("serverless", false, "also run the serverless tier on both sides (refused until the live providers have one, issue #16)")
	liveRuns := fs.Int("live-runs", 1, "live replays of each policy × segment; with more, the live attainment's spread is printed (the live run's own noise)")
	verboseFlag := fs.Bool("v", false, "log the stack's lifecycle events and every controller step, live and simulated, to stderr")
	if err := parseFlags(fs, args); err != nil {
		return o, false, false, err
	}
	segs, err := validate.ParseSegments(*traces, ".")
	if err != nil {
		return o, false, false, usagef("validate: --%v", err)
	}
	switch {
	case !(*sloMS > 0):
		return o, false, false, usagef("validate: --slo-ms must be > 0, got %v", *sloMS)
	case *maxInst < 1:
		return o, false, false, usagef("validate: --max-instances must be ≥ 1, got %d", *maxInst)
	case !(*workerRPS > 0):
		return o, false, false, usagef("validate: --worker-rps must be > 0, got %v", *workerRPS)
	case *liveRuns < 1 || *liveRuns > 10:
		return o, false, false, usagef("validate: --live-runs must be in [1, 10], got %d", *liveRuns)
	case *dur <= 0:
		return o, false, false, usagef("validate: --duration must be > 0, got %v", *dur)
	}
	rt, lib := workerRuntime()
	o = validate.Options{Model: *model, Policies: strings.Split(*policies, ","), Segments: segs, Wall: *dur,
		WorkerRPS: *workerRPS, MaxInstances: *maxInst, Seed: *seed, Runtime: rt, ORTLib: lib, Serverless: *serverless, LiveRuns: *liveRuns,
		SLO: slo.Spec{Threshold: time.Duration(*sloMS * float64(time.Millisecond)), Target: 0.98}}
	if err := validate.Check(o); err != nil {
		return o, false, false, usagef("%v", err)
	}
	return o, *jsonFlag, *verboseFlag, nil
}
