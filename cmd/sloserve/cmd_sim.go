package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// runSim is `sloserve sim`: replay a trace through one policy or all of them (docs/sim.md).
func runSim(ctx context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	tracePath := fs.String("trace", "", "arrival trace file (rate series or inter-arrivals; required)")
	configPath := fs.String("config", "", "sim config YAML (model profiles, catalog, policy options; see examples/sim.yaml)")
	policy := fs.String("policy", "sloserve", "policy name, comma-separated names, or 'all' (default sloserve; "+strings.Join(sim.Names(), ", ")+")")
	sloMS := fs.Float64("slo-ms", 0, "SLO latency threshold in ms (default 200, or the config's)")
	sloTarget := fs.Float64("slo-target", 0, "fraction of requests that must meet the threshold (default 0.98, or the config's)")
	seed := fs.Uint64("seed", 0, "random seed (default 1, or the config's)")
	rateScale := fs.Float64("scale", 0, "multiply the trace's request rate by this factor")
	maxRPS := fs.Float64("max-rps", 0, "rescale the trace so that its highest step rate is this many requests per second (MLProxy §3.5)")
	duration := fs.Duration("duration", 0, "replay only the first DURATION of the trace")
	asJSON := fs.Bool("json", false, "print the Summary as JSON (an array with several policies)")
	showPlans := fs.Bool("plans", false, "print to stderr the serverless buffer plans each policy put in force (the batch policy's (memory, B, T) over the run)")
	seriesPath := fs.String("series", "", "write the time series of every policy to this CSV file")
	plotDir := fs.String("plot", "", "write latency CCDF, fleet and cost PNGs into this directory")
	scoreboard := fs.Bool("scoreboard", false, "run every policy on every trace under --traces with each paper's setting and print one table (docs/scoreboard.md)")
	traceDirs := fs.String("traces", "", "scoreboard: comma-separated trace directories (default testdata/traces and ../shared/data/traces when present)")
	setting := fs.String("setting", "", "run a paper's benchmark on its own simulator: 'infless' (cluster: OSVT + Q&A) or 'cocktail' (ensembles: ImageNet); docs/scoreboard.md")
	dataDir := fs.String("data", "../shared/data", "--setting: shared data `dir` (profiles/, traces/, ensembles/, prices/)")
	servers := fs.Int("servers", 0, "--setting infless: cluster servers of 16 threads + 1 GPU (default 1024)")
	meanRPS := fs.Float64("mean-rps", 0, "--setting cocktail: scale the trace sample to this mean rate (default 50)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *setting != "" {
		if *scoreboard || *configPath != "" || *seriesPath != "" || *plotDir != "" || *rateScale != 0 || *sloMS != 0 || *sloTarget != 0 || *traceDirs != "" {
			return usagef("sim: --setting takes only --policy, --trace, --data, --max-rps, --mean-rps, --duration, --servers, --seed and --json")
		}
		if *servers < 0 || *meanRPS < 0 || *maxRPS < 0 || *duration < 0 {
			return usagef("sim: --servers, --mean-rps, --max-rps and --duration must be ≥ 0")
		}
		return runSimSetting(ctx, e, simSetting{name: *setting, policy: *policy, trace: *tracePath, data: *dataDir, maxRPS: *maxRPS,
			meanRPS: *meanRPS, duration: *duration, seed: *seed, servers: *servers, asJSON: *asJSON})
	}
	if *servers != 0 || *meanRPS != 0 {
		return usagef("sim: --servers and --mean-rps need --setting")
	}
	if *scoreboard {
		if *tracePath != "" || *configPath != "" || *seriesPath != "" || *plotDir != "" || *rateScale != 0 || *maxRPS != 0 {
			return usagef("sim: --scoreboard takes only --traces, --policy, --duration, --seed and --json")
		}
		return runScoreboard(ctx, e, *traceDirs, *policy, *duration, *seed, *asJSON)
	}
	if *tracePath == "" {
		return usagef("sim: --trace is required")
	}
	if *sloMS < 0 {
		return usagef("sim: --slo-ms must be > 0, got %v", *sloMS)
	}
	if *sloTarget != 0 && !(*sloTarget > 0 && *sloTarget <= 1) {
		return usagef("sim: --slo-target must be in (0, 1], got %v", *sloTarget)
	}
	if *rateScale < 0 || *maxRPS < 0 || *duration < 0 {
		return usagef("sim: --scale, --max-rps and --duration must be ≥ 0")
	}
	if *rateScale > 0 && *maxRPS > 0 {
		return usagef("sim: give --scale or --max-rps, not both")
	}

	var fc *sim.FileConfig
	if *configPath != "" {
		c, err := sim.LoadFileConfig(*configPath)
		if err != nil {
			return usagef("sim: --config: %v", err)
		}
		fc = c
	}
	cfg := sim.DefaultConfig()
	if fc != nil {
		if err := fc.Apply(&cfg); err != nil {
			return usagef("sim: --config: %v", err)
		}
	}
	if *sloMS > 0 {
		cfg.SLO.Threshold = time.Duration(*sloMS * float64(time.Millisecond))
	}
	if *sloTarget > 0 {
		cfg.SLO.Target = *sloTarget
	}
	if *seed != 0 {
		cfg.Seed = *seed
	}
	cat, err := fc.LoadCatalog()
	if err != nil {
		return usagef("sim: --config: %v", err)
	}
	model, err := fc.LoadModel()
	if err != nil {
		return usagef("sim: --config: %v", err)
	}

	tr, err := trace.Open(*tracePath)
	if err != nil {
		return usagef("sim: --trace: %v", err)
	}
	opts := trace.Options{RateScale: *rateScale, To: *duration}
	if *maxRPS > 0 {
		peak := tr.MaxRate()
		if !tr.IsSeries() || peak <= 0 {
			return usagef("sim: --max-rps needs a rate-series trace with a positive peak")
		}
		opts.RateScale = *maxRPS / peak
	}
	if tr, err = tr.With(opts); err != nil {
		return usagef("sim: %v", err)
	}

	names := []string{*policy}
	skipMissing := false
	switch {
	case *policy == "all":
		names, skipMissing = sim.Names(), true
	case strings.Contains(*policy, ","):
		names = strings.Split(*policy, ",")
	}
	for _, n := range names {
		if !contains(sim.Names(), n) {
			return usagef("sim: --policy: unknown policy %q (have %s, all)", n, strings.Join(sim.Names(), ", "))
		}
	}

	var bar *progressbar.ProgressBar
	if isTerminal(e.stderr) {
		total := int64(tr.Duration().Seconds()) * int64(len(names))
		bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(e.stderr),
			progressbar.OptionSetDescription("simulating"), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
		var done int64
		var last time.Duration
		cfg.Progress = func(reached time.Duration) {
			if reached < last { // next policy started
				done += int64(last.Seconds())
			}
			last = reached
			_ = bar.Set64(done + int64(reached.Seconds()))
		}
	}
	var decoder func(string) func(any) error
	if fc != nil {
		decoder = fc.Decoder
	}
	runs, skipped, err := sim.Compare(ctx, cfg, &cat, model, tr, names, decoder, skipMissing)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		if errors.Is(err, sim.ErrNotImplemented) {
			return fmt.Errorf("sim: %w", err)
		}
		return fmt.Errorf("sim: %w", err)
	}
	for _, s := range skipped {
		fmt.Fprintf(e.stderr, "sim: skipped %v\n", s.Err)
	}

	if *seriesPath != "" {
		if err := writeSeries(*seriesPath, runs); err != nil {
			return err
		}
	}
	if *plotDir != "" {
		files, err := sim.WritePlots(*plotDir, runs, float64(cfg.SLO.Threshold)/1e6, cfg.SLO.Target)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintf(e.stderr, "sim: wrote %s\n", f)
		}
	}
	sums := make([]slo.Summary, len(runs))
	for i, r := range runs {
		sums[i] = r.Result.Summary
		if *showPlans {
			for _, pc := range r.Result.Plans {
				fmt.Fprintf(e.stderr, "sim: %s plan at %v: memory %d MB, B %d, T %v, predicted P%g %.1f ms (service CV %g): %s\n",
					sums[i].Policy, pc.At.Sub(r.Result.Plans[0].At), pc.Plan.MemoryMB, pc.Plan.MaxBatch, pc.Plan.Timeout,
					pc.Plan.Percentile*100, pc.Plan.LatencyMS, pc.Plan.ServiceCV, pc.Plan.Reason)
			}
		}
	}
	if *asJSON {
		if len(sums) == 1 && *policy != "all" && !strings.Contains(*policy, ",") {
			return slo.WriteJSON(e.stdout, sums[0])
		}
		return slo.WriteJSON(e.stdout, sums)
	}
	return printSimTable(e, tr, sums)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func writeSeries(path string, runs []sim.Named) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sim: --series: %w", err)
	}
	// One header for all policies: the union of instance types, in first-seen order.
	var types []string
	for _, r := range runs {
		for _, t := range r.Result.Series.Types {
			if !contains(types, t) {
				types = append(types, t)
			}
		}
	}
	for i, r := range runs {
		s := r.Result.Series
		aligned := sim.Series{Types: types, Points: make([]sim.SeriesPoint, len(s.Points))}
		for j, p := range s.Points {
			q := p
			q.Instances = make([]int, len(types))
			for k, n := range p.Instances {
				for m, t := range types {
					if t == s.Types[k] {
						q.Instances[m] = n
					}
				}
			}
			aligned.Points[j] = q
		}
		if err := aligned.WriteCSV(f, r.Policy, i == 0); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sim: --series: %w", err)
	}
	return nil
}

func printSimTable(e env, tr *trace.Trace, sums []slo.Summary) error {
	if len(sums) == 0 {
		return nil
	}
	s0 := sums[0]
	fmt.Fprintf(e.stdout, "trace %s: %.0f s, %d requests; SLO %.0f ms for %.1f %%\n\n", tr.Name, s0.DurationS, s0.Requests, s0.SLO.ThresholdMS, 100*s0.SLO.Target)
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tattained\tmet SLO\tp50 ms\tp95 ms\tp99 ms\tcost $\tVM $\tserverless $\tmean VMs\tcold starts\tmean batch\t")
	for _, s := range sums {
		met := "no"
		if s.SLOAttainment >= s.SLO.Target {
			met = "yes"
		}
		fmt.Fprintf(tw, "%s\t%.2f %%\t%s\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%.2f\t\n", s.Policy, 100*s.SLOAttainment, met,
			s.LatencyMS.P50, s.LatencyMS.P95, s.LatencyMS.P99, s.CostUSD.Total, s.CostUSD.VM, s.CostUSD.Serverless,
			s.Extra["mean_vm_instances"], s.ColdStarts, s.MeanBatchSize)
	}
	return tw.Flush()
}

// runScoreboard is `sloserve sim --scoreboard` (docs/scoreboard.md).
func runScoreboard(ctx context.Context, e env, dirs, policy string, d time.Duration, seed uint64, asJSON bool) error {
	c := sim.ScoreboardConfig{Root: ".", Duration: d, Seed: seed}
	if dirs == "" {
		c.TraceDirs = []string{"testdata/traces", "../shared/data/traces"}
	} else {
		c.TraceDirs = strings.Split(dirs, ",")
	}
	if policy != "sloserve" && policy != "all" {
		c.Policies = strings.Split(policy, ",")
		for _, n := range c.Policies {
			if !contains(sim.Names(), n) {
				return usagef("sim: --policy: unknown policy %q (have %s, all)", n, strings.Join(sim.Names(), ", "))
			}
		}
	}
	c.Progress = func(setting, tr, pol string) { fmt.Fprintf(e.stderr, "scoreboard: %s / %s / %s\n", setting, tr, pol) }
	es, notes, err := sim.RunScoreboard(ctx, c)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintf(e.stderr, "scoreboard: skipped %s\n", n)
	}
	if asJSON {
		if es == nil {
			es = []sim.ScoreEntry{}
		}
		return slo.WriteJSON(e.stdout, es)
	}
	if err := sim.WriteScoreTable(e.stdout, es); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	for _, v := range sim.ScoreVerdict(es) {
		fmt.Fprintln(e.stdout, "- "+v)
	}
	return nil
}
