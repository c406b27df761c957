package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/experiment"
	"github.com/sloserve/sloserve/internal/experiment/pool"
	"github.com/sloserve/sloserve/internal/experiment/tune"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// simFlags are the command-line values of `sloserve sim`, before validation.
type simFlags struct {
	tracePath, configPath, policy string
	sloMS, sloTarget              float64 // ms; fraction (0: the config's)
	seed                          uint64
	rateScale, maxRPS             float64 // factor; requests/s
	duration                      time.Duration
	asJSON, showPlans             bool
	seriesPath, plotDir           string
	scoreboard, noCache           bool
	traceDirs, tuningPath         string
	settings                      string        // scoreboard: comma-separated setting names
	tunePrefix                    time.Duration // scoreboard: coarse-to-fine tuning on this prefix of each tuning part
	tunePrefixSet                 bool          // --tune-prefix was given
	setting, dataDir              string
	servers                       int
	meanRPS                       float64 // requests/s
	cpuProfile                    string  // write a CPU profile of the run to this file
}

// simOptions is one validated replay: the engine's config, catalog and model, the scaled trace,
// the policies to compare and where their results go.
type simOptions struct {
	cfg          sim.Config
	cat          cost.Catalog
	model        profile.Model
	decoder      func(policy string) func(any) error // per-policy options of --config; nil without one
	tr           *trace.Trace
	names        []string
	skipMissing  bool // --policy all: skip the policies not implemented yet
	tuned        []experiment.TunedBaseline
	tuning       *trace.Trace // the tuned baselines' tuning trace: --tuning, or the first half of --trace
	cache        *tune.Cache
	configDigest string // --config's contents, in the cache key
	single       bool   // one policy named: --json prints one Summary, not an array
	seriesPath   string
	plotDir      string
	showPlans    bool
	asJSON       bool
}

// runSim is `sloserve sim`: replay a trace through one policy or all of them (docs/sim.md).
func runSim(ctx context.Context, args []string, e env) error {
	f, err := parseSimFlags(args)
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if f.setting != "" {
		s, err := f.settingOptions()
		if err != nil {
			return err
		}
		return runSimSetting(ctx, e, s)
	}
	if f.servers != 0 || f.meanRPS != 0 {
		return usagef("sim: --servers and --mean-rps need --setting")
	}
	if f.tunePrefixSet && !f.scoreboard {
		return usagef("sim: --tune-prefix needs --scoreboard")
	}
	if f.scoreboard {
		if f.tracePath != "" || f.configPath != "" || f.seriesPath != "" || f.plotDir != "" || f.rateScale != 0 || f.maxRPS != 0 || f.tuningPath != "" {
			return usagef("sim: --scoreboard takes only --traces, --settings, --policy, --duration, --seed, --no-cache, --tune-prefix, --cpuprofile and --json")
		}
		return runScoreboard(ctx, e, f)
	}
	o, err := f.replayOptions()
	if err != nil {
		return err
	}
	runs, err := simulate(ctx, o, e.stderr)
	if err != nil {
		return err
	}
	tuned, err := simulateTuned(ctx, o, e.stderr)
	if err != nil {
		return err
	}
	return printSim(e, o, runs, tuned)
}

// parseSimFlags parses the flags of `sloserve sim`.
func parseSimFlags(args []string) (simFlags, error) {
	var f simFlags
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.StringVar(&f.tracePath, "trace", "", "arrival trace file (rate series or inter-arrivals; required)")
	fs.StringVar(&f.configPath, "config", "", "sim config YAML (model profiles, catalog, policy options; see examples/sim.yaml)")
	fs.StringVar(&f.policy, "policy", "sloserve", "policy name, comma-separated names, or 'all' (default sloserve; "+strings.Join(sim.Names(), ", ")+")")
	fs.Float64Var(&f.sloMS, "slo-ms", 0, "SLO latency threshold in ms (default 200, or the config's)")
	fs.Float64Var(&f.sloTarget, "slo-target", 0, "fraction of requests that must meet the threshold (default 0.98, or the config's)")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed (default 1, or the config's)")
	fs.Float64Var(&f.rateScale, "scale", 0, "multiply the trace's request rate by this factor")
	fs.Float64Var(&f.maxRPS, "max-rps", 0, "rescale the trace so that its highest step rate is this many requests per second (MLProxy §3.5)")
	fs.DurationVar(&f.duration, "duration", 0, "replay only the first DURATION of the trace")
	fs.BoolVar(&f.asJSON, "json", false, "print the Summary as JSON (an array with several policies)")
	fs.BoolVar(&f.showPlans, "plans", false, "print to stderr the serverless buffer plans each policy put in force (the batch policy's (memory, B, T) over the run)")
	fs.StringVar(&f.seriesPath, "series", "", "write the time series of every policy to this CSV file")
	fs.StringVar(&f.plotDir, "plot", "", "write latency CCDF, fleet and cost PNGs into this directory")
	fs.BoolVar(&f.scoreboard, "scoreboard", false, "run every policy on every trace under --traces with each paper's setting and print one table (docs/scoreboard.md)")
	fs.StringVar(&f.tuningPath, "tuning", "", "trace the tuned baselines (--policy all or NAME-tuned) are tuned on, scaled as --trace (default: the first half of --trace)")
	fs.BoolVar(&f.noCache, "no-cache", false, "do not read or write cached runs in .cache/tune (scoreboard and tuned baselines)")
	fs.DurationVar(&f.tunePrefix, "tune-prefix", experiment.DefaultTunePrefix, "scoreboard: tuners search each tuning part longer than DURATION on its first DURATION, then check their answer on the whole part (coarse to fine: docs/scoreboard.md \"Speed\"; 0: search whole parts, the exact search)")
	fs.StringVar(&f.settings, "settings", "", "scoreboard: comma-separated settings to run (default all: "+strings.Join(scoreSettingNames(), ", ")+")")
	fs.StringVar(&f.traceDirs, "traces", "", "scoreboard: comma-separated trace directories (default testdata/traces and ../shared/data/traces when present)")
	fs.StringVar(&f.setting, "setting", "", "run a paper's benchmark on its own simulator: 'infless' (cluster: OSVT + Q&A) or 'cocktail' (ensembles: ImageNet); docs/scoreboard.md")
	fs.StringVar(&f.dataDir, "data", "../shared/data", "--setting: shared data `dir` (profiles/, traces/, ensembles/, prices/)")
	fs.IntVar(&f.servers, "servers", 0, "--setting infless: cluster servers of 16 threads + 1 GPU (default 1024)")
	fs.Float64Var(&f.meanRPS, "mean-rps", 0, "--setting cocktail: scale the trace sample to this mean rate (default 50)")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this `file` (go tool pprof)")
	if err := parseFlags(fs, args); err != nil {
		return simFlags{}, err
	}
	fs.Visit(func(fl *flag.Flag) { f.tunePrefixSet = f.tunePrefixSet || fl.Name == "tune-prefix" })
	return f, nil
}

// settingOptions validates the flags of `sim --setting` into the setting to run.
func (f simFlags) settingOptions() (simSetting, error) {
	if f.scoreboard || f.configPath != "" || f.seriesPath != "" || f.plotDir != "" || f.rateScale != 0 || f.sloMS != 0 || f.sloTarget != 0 || f.traceDirs != "" {
		return simSetting{}, usagef("sim: --setting takes only --policy, --trace, --data, --max-rps, --mean-rps, --duration, --servers, --seed and --json")
	}
	if f.servers < 0 || f.meanRPS < 0 || f.maxRPS < 0 || f.duration < 0 {
		return simSetting{}, usagef("sim: --servers, --mean-rps, --max-rps and --duration must be ≥ 0")
	}
	return simSetting{name: f.setting, policy: f.policy, trace: f.tracePath, data: f.dataDir, maxRPS: f.maxRPS,
		meanRPS: f.meanRPS, duration: f.duration, seed: f.seed, servers: f.servers, asJSON: f.asJSON}, nil
}

// replayOptions validates the flags of a trace replay and loads its config, trace and policies.
func (f simFlags) replayOptions() (simOptions, error) {
	switch {
	case f.tracePath == "":
		return simOptions{}, usagef("sim: --trace is required")
	case f.sloMS < 0:
		return simOptions{}, usagef("sim: --slo-ms must be > 0, got %v", f.sloMS)
	case f.sloTarget != 0 && !(f.sloTarget > 0 && f.sloTarget <= 1):
		return simOptions{}, usagef("sim: --slo-target must be in (0, 1], got %v", f.sloTarget)
	case f.rateScale < 0 || f.maxRPS < 0 || f.duration < 0:
		return simOptions{}, usagef("sim: --scale, --max-rps and --duration must be ≥ 0")
	case f.rateScale > 0 && f.maxRPS > 0:
		return simOptions{}, usagef("sim: give --scale or --max-rps, not both")
	}
	o := simOptions{seriesPath: f.seriesPath, plotDir: f.plotDir, showPlans: f.showPlans, asJSON: f.asJSON,
		single: f.policy != "all" && !strings.Contains(f.policy, ",")}
	if err := f.loadConfig(&o); err != nil {
		return simOptions{}, err
	}
	var err error
	if o.tr, err = f.openTrace(); err != nil {
		return simOptions{}, err
	}
	if o.names, o.skipMissing, err = simPolicies(f.policy); err != nil {
		return simOptions{}, err
	}
	o.names, o.tuned = splitTuned(o.names, f.policy == "all")
	if len(o.tuned) > 0 {
		if o.tuning, err = f.tuningTrace(o.tr); err != nil {
			return simOptions{}, err
		}
		o.cache = openCache(f.noCache)
		if f.configPath != "" {
			if o.configDigest, err = experiment.FileDigest(f.configPath); err != nil {
				return simOptions{}, usagef("sim: --config: %v", err)
			}
		}
	} else if f.tuningPath != "" {
		return simOptions{}, usagef("sim: --tuning needs --policy all or a NAME-tuned policy")
	}
	return o, nil
}

// loadConfig sets o's engine config, catalog, model and policy options from the defaults, --config
// and the SLO and seed flags.
func (f simFlags) loadConfig(o *simOptions) error {
	var fc *experiment.FileConfig
	if f.configPath != "" {
		c, err := experiment.LoadFileConfig(f.configPath)
		if err != nil {
			return usagef("sim: --config: %v", err)
		}
		fc = c
	}
	o.cfg = sim.DefaultConfig()
	if fc != nil {
		if err := fc.Apply(&o.cfg); err != nil {
			return usagef("sim: --config: %v", err)
		}
		o.decoder = fc.Decoder
	}
	if f.sloMS > 0 {
		o.cfg.SLO.Threshold = time.Duration(f.sloMS * float64(time.Millisecond))
	}
	if f.sloTarget > 0 {
		o.cfg.SLO.Target = f.sloTarget
	}
	if f.seed != 0 {
		o.cfg.Seed = f.seed
	}
	var err error
	if o.cat, err = fc.LoadCatalog(); err != nil {
		return usagef("sim: --config: %v", err)
	}
	if o.model, err = fc.LoadModel(); err != nil {
		return usagef("sim: --config: %v", err)
	}
	return nil
}

// openTrace opens --trace, scaled by --scale or to --max-rps and cut to --duration.
func (f simFlags) openTrace() (*trace.Trace, error) {
	tr, err := trace.Open(f.tracePath)
	if err != nil {
		return nil, usagef("sim: --trace: %v", err)
	}
	opts := trace.Options{RateScale: f.rateScale, To: f.duration}
	if f.maxRPS > 0 {
		peak := tr.MaxRate()
		if !tr.IsSeries() || peak <= 0 {
			return nil, usagef("sim: --max-rps needs a rate-series trace with a positive peak")
		}
		opts.RateScale = f.maxRPS / peak
	}
	if tr, err = tr.With(opts); err != nil {
		return nil, usagef("sim: %v", err)
	}
	return tr, nil
}

// simPolicies are the policies --policy names (one, a comma-separated list, or all, which skips
// the ones not implemented yet).
func simPolicies(policy string) (names []string, skipMissing bool, err error) {
	names = []string{policy}
	switch {
	case policy == "all":
		names, skipMissing = sim.Names(), true
	case strings.Contains(policy, ","):
		names = strings.Split(policy, ",")
	}
	for _, n := range names {
		if !contains(sim.Names(), n) && !contains(tunedNames(), n) {
			return nil, false, usagef("sim: --policy: unknown policy %q (have %s, %s, all)", n, strings.Join(sim.Names(), ", "), strings.Join(tunedNames(), ", "))
		}
	}
	return names, skipMissing, nil
}

// simulate replays the trace through each policy (experiment.Compare), with a progress bar when stderr
// is a terminal; the policies skipped are noted on stderr.
func simulate(ctx context.Context, o simOptions, stderr io.Writer) ([]experiment.Named, error) {
	cfg := o.cfg
	var bar *progressbar.ProgressBar
	if isTerminal(stderr) {
		total := int64(o.tr.Duration().Seconds()) * int64(len(o.names))
		bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(stderr),
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
	runs, skipped, err := experiment.Compare(ctx, cfg, &o.cat, o.model, o.tr, o.names, o.decoder, o.skipMissing)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "sim: skipped %v\n", s.Err)
	}
	return runs, nil
}

// printSim writes the runs' series (--series) and plots (--plot), prints their plans to stderr
// (--plans) and their Summaries to stdout, as JSON or a table.
func printSim(e env, o simOptions, runs []experiment.Named, tuned []slo.Summary) error {
	if o.seriesPath != "" {
		if err := writeSeries(o.seriesPath, runs); err != nil {
			return err
		}
	}
	if o.plotDir != "" {
		files, err := experiment.WritePlots(o.plotDir, runs, float64(o.cfg.SLO.Threshold)/1e6, o.cfg.SLO.Target)
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
		if o.showPlans {
			for _, pc := range r.Result.Plans {
				fmt.Fprintf(e.stderr, "sim: %s plan at %v: memory %d MB, B %d, T %v, predicted P%g %.1f ms (service CV %g): %s\n",
					sums[i].Policy, pc.At.Sub(r.Result.Plans[0].At), pc.Plan.MemoryMB, pc.Plan.MaxBatch, pc.Plan.Timeout,
					pc.Plan.Percentile*100, pc.Plan.LatencyMS, pc.Plan.ServiceCV, pc.Plan.Reason)
			}
		}
	}
	sums = append(sums, tuned...)
	if o.asJSON {
		if len(sums) == 1 && o.single {
			return slo.WriteJSON(e.stdout, sums[0])
		}
		return slo.WriteJSON(e.stdout, sums)
	}
	return printSimTable(e, o.tr, sums)
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

func writeSeries(path string, runs []experiment.Named) error {
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
		if err := experiment.WriteSeriesCSV(f, aligned, r.Policy, i == 0); err != nil {
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
func runScoreboard(ctx context.Context, e env, f simFlags) error {
	c := experiment.ScoreboardConfig{Root: ".", Duration: f.duration, Seed: f.seed, Cache: openCache(f.noCache), Pool: pool.New(0), TunePrefix: f.tunePrefix}
	if f.tunePrefix < 0 {
		return usagef("sim: --tune-prefix: must be ≥ 0, got %v", f.tunePrefix)
	}
	if f.traceDirs == "" {
		c.TraceDirs = []string{"testdata/traces", "../shared/data/traces"}
	} else {
		c.TraceDirs = strings.Split(f.traceDirs, ",")
	}
	if f.settings != "" {
		for _, n := range strings.Split(f.settings, ",") {
			st, ok := scoreSetting(n)
			if !ok {
				return usagef("sim: --settings: unknown setting %q (have %s)", n, strings.Join(scoreSettingNames(), ", "))
			}
			c.Settings = append(c.Settings, st)
		}
	}
	if f.policy != "sloserve" && f.policy != "all" {
		c.Policies = strings.Split(f.policy, ",")
		for _, n := range c.Policies {
			if !contains(sim.Names(), n) && !contains(tunedNames(), n) {
				return usagef("sim: --policy: unknown policy %q (have %s, %s, all)", n, strings.Join(sim.Names(), ", "), strings.Join(tunedNames(), ", "))
			}
		}
	}
	c.Progress = func(setting, tr, pol string) { fmt.Fprintf(e.stderr, "scoreboard: %s / %s / %s\n", setting, tr, pol) }
	es, notes, err := experiment.RunScoreboard(ctx, c)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintf(e.stderr, "scoreboard: skipped %s\n", n)
	}
	if f.asJSON {
		if es == nil {
			es = []experiment.ScoreEntry{}
		}
		return slo.WriteJSON(e.stdout, es)
	}
	if err := experiment.WriteScoreTable(e.stdout, es); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout)
	for _, v := range experiment.ScoreVerdict(es) {
		fmt.Fprintln(e.stdout, "- "+v)
	}
	return nil
}

// startCPUProfile starts a CPU profile into path (--cpuprofile); stop ends it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, usagef("sim: --cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, fmt.Errorf("sim: --cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); out.Close() }, nil
}
