package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
)

// The settings of `sloserve sim --setting`: the papers' benchmarks that do not run on the
// shared-queue engine. INFless's (OSVT + Q&A on a cluster of CPU+GPU servers) runs on the cluster
// simulator, Cocktail's (ImageNet ensembles under <latency, accuracy> constraints) on the
// ensemble simulator; docs/scoreboard.md.
const (
	settingINFless  = "infless"
	settingCocktail = "cocktail"
)

// simSetting holds the flags of `sloserve sim` a setting reads.
type simSetting struct {
	name, policy, trace, data string
	maxRPS, meanRPS           float64
	duration                  time.Duration
	seed                      uint64
	servers                   int
	asJSON                    bool
}

// runSimSetting runs s.
func runSimSetting(ctx context.Context, e env, s simSetting) error {
	switch s.name {
	case settingINFless:
		return runSimINFless(ctx, e, s)
	case settingCocktail:
		// Cocktail's setting is `sloserve ensemble simulate`'s; the same flags, one front door.
		args := []string{"--data", s.data, "--policy", defaultPolicy(s.policy, "sloserve,cocktail")}
		if s.trace != "" {
			args = append(args, "--trace", s.trace)
		}
		if s.duration > 0 {
			args = append(args, "--duration", s.duration.String())
		}
		if s.meanRPS > 0 {
			args = append(args, "--mean-rps", strconv.FormatFloat(s.meanRPS, 'g', -1, 64))
		}
		if s.seed != 0 {
			args = append(args, "--seed", strconv.FormatUint(s.seed, 10))
		}
		if s.asJSON {
			args = append(args, "--json")
		}
		return runEnsembleSimulate(ctx, args, e)
	}
	return usagef("sim: --setting: unknown setting %q (have %s, %s)", s.name, settingINFless, settingCocktail)
}

func defaultPolicy(p, def string) string {
	if p == "" || p == "sloserve" {
		return def
	}
	return p
}

// runSimINFless is `sloserve sim --setting infless`: INFless §5's OSVT + Q&A workload
// (sim.OSVTQA) driven by three traces T0–T2 (default burst300-2..4), each rescaled to --max-rps
// (default 400) and cut to --duration (default 15m), on --servers servers of 16 threads + 1 GPU
// (default 1024), one row per cluster policy.
func runSimINFless(ctx context.Context, e env, s simSetting) error {
	if s.meanRPS != 0 {
		return usagef("sim: --mean-rps is for --setting cocktail; the infless setting rescales by --max-rps")
	}
	names := strings.Split(defaultPolicy(s.policy, "sloserve,infless"), ",")
	if s.policy == "all" {
		names = sim.ClusterPolicyNames()
	}
	var traces []string
	if s.trace == "" {
		for _, f := range []string{"burst300-2.csv", "burst300-3.csv", "burst300-4.csv"} {
			traces = append(traces, filepath.Join(s.data, "traces", "azure-functions", f))
		}
	} else {
		traces = strings.Split(s.trace, ",")
	}
	if len(traces) != 3 {
		return usagef("sim: --setting infless takes three comma-separated traces (T0,T1,T2), got %d", len(traces))
	}
	peak, dur, servers := s.maxRPS, s.duration, s.servers
	if peak == 0 {
		peak = 400
	}
	if dur == 0 {
		dur = 15 * time.Minute
	}
	if servers == 0 {
		servers = sim.BusyClusterServers
	}
	seed := s.seed
	if seed == 0 {
		seed = 1
	}
	var sums []inflessRow
	for _, n := range names {
		p, err := sim.NewClusterPolicy(strings.TrimSpace(n))
		if err != nil {
			return usagef("sim: --policy: %v", err)
		}
		fns, err := sim.LoadWorkload(filepath.Join(s.data, "profiles", "infless"), traces, sim.OSVTQA,
			sim.WorkloadOptions{PeakRPS: peak, Duration: dur, SLOTarget: 0.95, Seed: seed})
		if err != nil {
			return usagef("sim: --setting infless: %v", err)
		}
		cfg := sim.DefaultClusterConfig()
		cfg.Servers, cfg.Seed = servers, seed
		cfg.Trace = fmt.Sprintf("OSVT+Q&A peak %g rps", peak)
		r, err := sim.RunCluster(ctx, cfg, fns, p)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		row := inflessRow{Summary: r.Summary}
		for i, f := range r.Functions {
			row.PerFunction = append(row.PerFunction, inflessFunction{Function: fns[i].Name, Summary: f})
		}
		sums = append(sums, row)
	}
	if s.asJSON {
		return slo.WriteJSON(e.stdout, sums)
	}
	fmt.Fprintf(e.stdout, "INFless OSVT + Q&A: %s, peak %g rps per function, %v, %d servers, seed %d; SLO per function (200 / 50 ms) for 95 %%\n\n",
		strings.Join(traceNames(traces), ", "), peak, dur, servers, seed)
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\trequests\tattained\tviolations\tworst function\tmean active servers\trps/resource\tfragment ratio\twith spares, loans\tmean instances\t")
	for _, x := range sums {
		worst := x.PerFunction[0]
		for _, f := range x.PerFunction {
			if f.SLOAttainment < worst.SLOAttainment {
				worst = f
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f %%\t%.2f %%\t%s %.2f %%\t%.2f\t%.4f\t%.1f %%\t%.1f %%\t%.1f\t\n", x.Policy, x.Requests, 100*x.SLOAttainment, 100*(1-x.SLOAttainment),
			worst.Function, 100*(1-worst.SLOAttainment), x.Extra["mean_active_servers"], x.Extra["rps_per_resource"], 100*x.Extra["fragment_ratio"],
			100*x.Extra["fragment_ratio_filled"], x.Extra["mean_instances"])
	}
	return tw.Flush()
}

// inflessRow is one policy of `sloserve sim --setting infless`: the aggregate Summary and, in
// per_function, each function's (attainment is required per function, docs/infless.md).
type inflessRow struct {
	slo.Summary
	PerFunction []inflessFunction `json:"per_function"`
}

// inflessFunction is one function's Summary, named.
type inflessFunction struct {
	Function string `json:"function"`
	slo.Summary
}

func traceNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
