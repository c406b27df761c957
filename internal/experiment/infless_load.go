package experiment

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/planner/infless"
	"github.com/sloserve/sloserve/internal/policy"
	inflesspol "github.com/sloserve/sloserve/internal/policy/infless"
	"github.com/sloserve/sloserve/internal/sim"
)

func init() {
	register(Experiment{Name: "infless-load", Summary: "INFless on a busy cluster: burst300-2..4 and Azure fn2–fn4 at 100, 400 and 1,600 rps peaks (docs/infless.md)",
		Doc: "docs/infless.md \"A busy cluster\"; DATA/profiles/infless, DATA/traces/azure-functions; --peaks, --sets burst300|azure, --duration, --policies; about 7 min",
		Run: inflessLoadExperiment})
}

// LoadClusterServers is the cluster of the busy-load evaluation: 1,024 servers of 16 threads and
// one GPU (512 INFless testbed machines), enough that no policy runs out of room at 1,600 rps per
// function; only active servers count.
const LoadClusterServers = 1024

// loadVariants are the busy-cluster rows: the tables' variants, OpenFaaS+, the diagnostic forms
// of Eq. 10 (INFless's own release order, no defragmentation) and issue #18's three pieces one at
// a time off the default, which run only when asked for by name.
func loadVariants(names []string) []inflessVariant {
	paper := func(name string, edit func(*inflesspol.Options)) inflessVariant {
		return inflessVariant{name: name, mk: func() (policy.Cluster, error) {
			o := inflesspol.PaperOptions()
			edit(&o)
			return inflesspol.New(name, o)
		}}
	}
	dflt := func(name string, edit func(*inflesspol.Options)) inflessVariant {
		return inflessVariant{name: name, mk: func() (policy.Cluster, error) {
			o := inflesspol.DefaultOptions()
			edit(&o)
			return inflesspol.New(name, o)
		}}
	}
	vs := append(append(inflessVariants(), fairVariants()...),
		paper("infless-CRE", func(o *inflesspol.Options) { o.Metric = infless.MetricOriginal }),
		paper("infless-β=G/C", func(o *inflesspol.Options) {
			o.Beta = float64(cluster.DefaultServer.GPU) / float64(cluster.DefaultServer.CPU)
		}),
		dflt("infless-noqcap", func(o *inflesspol.Options) { o.QueueCap = false }),
		dflt("infless-nobound", func(o *inflesspol.Options) { o.BoundQueues = false }),
		dflt("infless-nobacklog", func(o *inflesspol.Options) { o.Backlog = false }))
	if len(names) == 0 {
		var out []inflessVariant
		for _, v := range vs {
			if v.name != "infless-noqcap" && v.name != "infless-nobound" && v.name != "infless-nobacklog" {
				out = append(out, v)
			}
		}
		return out
	}
	return keepVariants(vs, names, "uniform", "openfaas+")
}

// inflessLoadExperiment is the busy-cluster evaluation of docs/infless.md (INFless §5.2 Fig.
// 11/12, §5.3 Fig. 17/18): OSVT + Q&A on one cluster driven by the burst300-2..4 traces (first 15
// minutes) and by Azure fn2–fn4 (12:00–13:00 of day 1), rescaled to a peak of P requests per
// second per function, for several P, comparing INFless with the BATCH-style uniform baseline,
// OpenFaaS+, the Fig. 11 ablations and Eq. 10 as printed. Throughput per unit of resource is
// completed requests per β-weighted active-server-second; the fragment ratio is §5.3's (free
// resources of active servers over their capacity), β-weighted and per dimension.
func inflessLoadExperiment(ctx context.Context, o Options, w io.Writer) error {
	peaks := []float64{100, 400, 1600}
	if len(o.Peaks) > 0 {
		peaks = o.Peaks
	}
	variants := loadVariants(o.Policies)
	sets := []struct {
		name      string
		files     []string
		from, dur time.Duration
	}{
		{"burst300", []string{"burst300-2.csv", "burst300-3.csv", "burst300-4.csv"}, 0, 15 * time.Minute},
		{"azure", []string{"fn2.rpm.csv", "fn3.rpm.csv", "fn4.rpm.csv"}, 12 * time.Hour, time.Hour},
	}
	for _, set := range sets {
		if !keep(o.Sets, set.name) {
			continue
		}
		var paths []string
		for _, f := range set.files {
			paths = append(paths, o.data(filepath.Join("traces", "azure-functions", f)))
		}
		if o.Duration > 0 {
			set.dur = o.Duration
		}
		for _, peak := range peaks {
			if set.from > 0 {
				fmt.Fprintf(w, "%s %s, peak %.0f rps per function, %v from %v\n", set.name, strings.Join(set.files, ","), peak, set.dur, set.from)
			} else {
				fmt.Fprintf(w, "%s %s, peak %.0f rps per function, first %v\n", set.name, strings.Join(set.files, ","), peak, set.dur)
			}
			o.progress("infless-load: %s at %.0f rps", set.name, peak)
			runs, err := InflessLoad(ctx, o.data("profiles/infless"), paths, set.name, set.from, set.dur, peak, variants)
			if err != nil {
				return fmt.Errorf("infless-load %s at %.0f rps: %w", set.name, peak, err)
			}
			writeLoadTable(w, runs)
		}
	}
	return nil
}

// InflessLoad runs every variant on one trace set at one peak on the busy-load cluster
// (LoadClusterServers), in order.
func InflessLoad(ctx context.Context, profileDir string, paths []string, set string, from, dur time.Duration, peak float64, variants []inflessVariant) ([]InflessTableRun, error) {
	cfg := sim.DefaultClusterConfig()
	cfg.Servers = LoadClusterServers
	cfg.Trace = fmt.Sprintf("%s peak %.0f", set, peak)
	wo := sim.WorkloadOptions{PeakRPS: peak, From: from, Duration: dur, SLOTarget: 0.95, Seed: 1}
	return runVariants(ctx, profileDir, paths, wo, cfg, variants)
}

// writeLoadTable prints the busy-cluster table, with the default infless policy's per-function
// violations above it and every policy's below it.
func writeLoadTable(w io.Writer, runs []InflessTableRun) {
	var base, of float64
	for _, r := range runs {
		switch r.Name {
		case "uniform":
			base = r.Summary.Extra["rps_per_resource"]
		case "openfaas+":
			of = r.Summary.Extra["rps_per_resource"]
		case "infless":
			for _, f := range r.Functions {
				fmt.Fprintf(w, "  infless %-16s requests %8d violations %6.2f %% p99 %6.0f ms mean batch %5.2f cold-start requests %d\n",
					f.Trace, f.Requests, 100*(1-f.SLOAttainment), f.LatencyMS.P99, f.MeanBatchSize, f.ColdStarts)
			}
			x := r.Summary.Extra
			fmt.Fprintf(w, "  infless launches %.0f releases %.0f (preemptions of spares %.0f)\n", x["launches"], x["releases"], x["preemptions"])
		}
	}
	fmt.Fprintln(w, "\n| policy | requests | SLO violations | rps/resource | vs uniform | vs openfaas+ | fragment ratio (β) | CPU free | GPU free | with spares, loans | active servers | mean instances | batch sizes launched |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range runs {
		s := r.Summary
		x := s.Extra
		fmt.Fprintf(w, "| %s | %d | %.2f %% | %.4f | %.2f× | %.2f× | %.1f %% | %.1f %% | %.1f %% | %.1f %% | %.1f | %.1f | %v |\n", r.Name, s.Requests, 100*(1-s.SLOAttainment),
			x["rps_per_resource"], x["rps_per_resource"]/max(base, 1e-12), x["rps_per_resource"]/max(of, 1e-12),
			100*x["fragment_ratio"], 100*x["fragment_cpu"], 100*x["fragment_gpu"], 100*x["fragment_ratio_filled"], x["mean_active_servers"], x["mean_instances"], r.BatchInstances)
	}
	writePerFunction(w, runs)
	writeFairGain(w, runs)
	fmt.Fprintln(w)
}
