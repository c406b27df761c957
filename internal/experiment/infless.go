package experiment

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	"github.com/sloserve/sloserve/internal/policy/uniform"
	"github.com/sloserve/sloserve/internal/sim"
)

func init() {
	register(Experiment{Name: "infless-tables", Summary: "INFless OSVT + Q&A on one cluster: Azure fn2–fn4 (24 h) and burst300-2..4 (1 h) at 100 rps peaks (docs/infless.md)",
		Doc: "docs/infless.md; DATA/profiles/infless, DATA/traces/azure-functions; about 6 min", Run: inflessTablesExperiment})
}

// inflessVariant is one row of the INFless tables: the default policy, the uniform baseline, the
// Fig. 11 ablations of the default, Eq. 10 as printed (inflesspol.PaperOptions) and the default
// without lending (inflesspol.Options.Lend).
type inflessVariant struct {
	name string
	mk   func() (policy.Cluster, error)
	// tune, when set instead of mk, builds the row's policy after choosing its options on the
	// tuning part (run) — the tuned baselines of issue #17.
	tune func(ctx context.Context, run tuningRun) (policy.Cluster, error)
}

func inflessVariants() []inflessVariant {
	abl := func(name string, edit func(*inflesspol.Options)) inflessVariant {
		return inflessVariant{name: name, mk: func() (policy.Cluster, error) {
			o := inflesspol.DefaultOptions()
			edit(&o)
			return inflesspol.New(name, o)
		}}
	}
	return []inflessVariant{
		abl("infless", func(*inflesspol.Options) {}),
		{name: "uniform", mk: func() (policy.Cluster, error) { return uniform.New(uniform.DefaultOptions()) }},
		abl("infless-BB", func(o *inflesspol.Options) { o.MaxBatch = 1 }),
		abl("infless-OP1.5", func(o *inflesspol.Options) { o.Offset = 0.5 }),
		abl("infless-OP2", func(o *inflesspol.Options) { o.Offset = 1.0 }),
		abl("infless-RS", func(o *inflesspol.Options) { o.FirstFit = true }),
		{name: "infless-Eq.10", mk: func() (policy.Cluster, error) { return inflesspol.New("infless-Eq.10", inflesspol.PaperOptions()) }},
		abl("infless-nolend", func(o *inflesspol.Options) { o.Lend = false }),
		abl("infless-nospare", func(o *inflesspol.Options) { o.Spare = false }),
		abl("infless-Eq.1", func(o *inflesspol.Options) { o.QueueCap, o.BoundQueues, o.Backlog = false, false, false }),
	}
}

// keepVariants keeps the named variants (all when names is empty); uniform always stays, as the
// ratios' base.
func keepVariants(vs []inflessVariant, names []string, base ...string) []inflessVariant {
	var out []inflessVariant
	for _, v := range vs {
		if keep(names, v.name) || slices.Contains(base, v.name) {
			out = append(out, v)
		}
	}
	return out
}

// InflessTableRun is one run of an INFless table: a variant on one trace set.
type InflessTableRun struct {
	Name string
	*sim.ClusterResult
}

// InflessTable runs every named variant (all when names is empty) on the OSVT + Q&A workload
// driven by the traces (profiles from profileDir, peak rescaled to peakRPS, the first d), in order.
func InflessTable(ctx context.Context, profileDir string, traces []string, names []string, label string, peakRPS float64, d time.Duration) ([]InflessTableRun, error) {
	cfg := sim.DefaultClusterConfig()
	cfg.Trace = label
	wo := sim.WorkloadOptions{PeakRPS: peakRPS, Duration: d, SLOTarget: 0.95, Seed: 1}
	return runVariants(ctx, profileDir, traces, wo, cfg, keepVariants(append(inflessVariants(), fairVariants()...), names, "uniform"))
}

// runVariants runs each variant on a fresh OSVT + Q&A workload (sim.OSVTQA) in the cluster cfg
// describes, in order; tuned rows choose their options on the first half of the window.
func runVariants(ctx context.Context, profileDir string, traces []string, wo sim.WorkloadOptions, cfg sim.ClusterConfig, variants []inflessVariant) ([]InflessTableRun, error) {
	tune := wo
	tune.Duration = wo.Duration / 2
	return runSplit(ctx, profileDir, traces, tune, wo, cfg, variants)
}

// runSplit runs each variant on the evaluation workload eval, in order; a tuned row first
// chooses its options on the tuning workload tune.
func runSplit(ctx context.Context, profileDir string, traces []string, tune, eval sim.WorkloadOptions, cfg sim.ClusterConfig, variants []inflessVariant) ([]InflessTableRun, error) {
	var out []InflessTableRun
	tuning := func(ctx context.Context, p policy.Cluster) (*sim.ClusterResult, float64, error) {
		fns, err := sim.LoadWorkload(profileDir, traces, sim.OSVTQA, tune)
		if err != nil {
			return nil, 0, err
		}
		r, err := sim.RunCluster(ctx, cfg, fns, p)
		return r, tune.SLOTarget, err
	}
	for _, v := range variants {
		fns, err := sim.LoadWorkload(profileDir, traces, sim.OSVTQA, eval)
		if err != nil {
			return out, err
		}
		var p policy.Cluster
		if v.tune != nil {
			p, err = v.tune(ctx, tuning)
		} else {
			p, err = v.mk()
		}
		if err != nil {
			return out, err
		}
		r, err := sim.RunCluster(ctx, cfg, fns, p)
		if err != nil {
			return out, fmt.Errorf("%s: %w", v.name, err)
		}
		out = append(out, InflessTableRun{v.name, r})
	}
	return out, nil
}

// inflessTablesExperiment prints docs/infless.md's tables: OSVT + Q&A on one cluster, driven by
// Azure fn2–fn4 (first 24 h) and by burst300-2..4 (1 h), every trace rescaled to a 100 rps peak.
func inflessTablesExperiment(ctx context.Context, o Options, w io.Writer) error {
	sets := []struct {
		name   string
		traces []string
		dur    time.Duration
	}{
		{"azure fn2-fn4 (24 h)", []string{"fn2.rpm.csv", "fn3.rpm.csv", "fn4.rpm.csv"}, 24 * time.Hour},
		{"burst300-2..4 (1 h)", []string{"burst300-2.csv", "burst300-3.csv", "burst300-4.csv"}, time.Hour},
	}
	for _, set := range sets {
		var paths []string
		for _, f := range set.traces {
			paths = append(paths, o.data(filepath.Join("traces", "azure-functions", f)))
		}
		dur := set.dur
		if o.Duration > 0 {
			dur = o.Duration
		}
		o.progress("infless-tables: %s", set.name)
		runs, err := InflessTable(ctx, o.data("profiles/infless"), paths, o.Policies, set.name, 100, dur)
		if err != nil {
			return fmt.Errorf("infless-tables %s: %w", set.name, err)
		}
		writeInflessTable(w, set.name, runs)
	}
	return nil
}

// writeInflessTable prints one set's table, the default infless policy's per-function lines
// above it and the per-function violations below it.
func writeInflessTable(w io.Writer, set string, runs []InflessTableRun) {
	fmt.Fprintf(w, "%s\n\n", set)
	var base float64
	for _, r := range runs {
		if r.Name == "uniform" {
			base = r.Summary.Extra["rps_per_resource"]
		}
		if r.Name == "infless" {
			for _, f := range r.Functions {
				fmt.Fprintf(w, "  infless %-20s requests %8d violations %6.2f %% p99 %6.0f ms mean batch %.2f cold-start requests %d\n", f.Trace, f.Requests,
					100*(1-f.SLOAttainment), f.LatencyMS.P99, f.MeanBatchSize, f.ColdStarts)
			}
		}
	}
	fmt.Fprintln(w, "\n| policy | requests | SLO violations | rps/resource | vs uniform | fragment ratio | with spares, loans | rps/alloc. resource | mean instances | active servers | batch sizes launched |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range runs {
		s := r.Summary
		fmt.Fprintf(w, "| %s | %d | %.2f %% | %.4f | %.2f× | %.1f %% | %.1f %% | %.3f | %.1f | %.1f | %v |\n", r.Name, s.Requests, 100*(1-s.SLOAttainment),
			s.Extra["rps_per_resource"], s.Extra["rps_per_resource"]/max(base, 1e-12), 100*s.Extra["fragment_ratio"], 100*s.Extra["fragment_ratio_filled"],
			s.Extra["rps_per_alloc_resource"], s.Extra["mean_instances"], s.Extra["mean_active_servers"], r.BatchInstances)
	}
	writePerFunction(w, runs)
	writeFairGain(w, runs)
	fmt.Fprintln(w)
}

// writePerFunction prints each policy's SLO violations per function and the worst of them: every
// function must meet its target (EVALUATION.md §4), not only the aggregate.
func writePerFunction(w io.Writer, runs []InflessTableRun) {
	head := "| policy |"
	for _, f := range sim.OSVTQA {
		head += " " + f.Model + " |"
	}
	fmt.Fprintln(w, "\nper-function SLO violations:")
	fmt.Fprintf(w, "%s worst |\n", head)
	fmt.Fprintf(w, "| --- |%s ---: |\n", strings.Repeat(" ---: |", len(sim.OSVTQA)))
	for _, r := range runs {
		row := "| " + r.Name + " |"
		worst := 0.0
		for _, f := range r.Functions {
			v := 100 * (1 - f.SLOAttainment)
			worst = max(worst, v)
			row += fmt.Sprintf(" %.2f %% |", v)
		}
		fmt.Fprintf(w, "%s %.2f %% |\n", row, worst)
	}
}
