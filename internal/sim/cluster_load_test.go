package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/planner/infless"
)

// TestINFlessLoad is the busy-cluster evaluation of docs/infless.md (INFless §5.2 Fig. 11/12,
// §5.3 Fig. 17/18): OSVT + Q&A on one cluster driven by the burst300-2..4 traces rescaled to a
// peak of P requests per second per function, for several P, comparing INFless with the
// BATCH-style uniform baseline, OpenFaaS+ and the Fig. 11 ablations. Throughput per unit of
// resource is completed requests per β-weighted active-server-second; the fragment ratio is
// §5.3's (free resources of active servers over their capacity), β-weighted and per dimension.
//
//	SLOSERVE_INFLESS=1 go test -count=1 -run TestINFlessLoad -v -timeout 60m ./internal/sim
//
// SLOSERVE_INFLESS_PEAKS (comma-separated rps, default 100,400,1600) and SLOSERVE_INFLESS_DUR
// (default 15m) change the loads and the replayed prefix.
func TestINFlessLoad(t *testing.T) {
	if os.Getenv("SLOSERVE_INFLESS") == "" {
		t.Skip("long: set SLOSERVE_INFLESS=1")
	}
	data := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(data); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	peaks := []float64{100, 400, 1600}
	if s := os.Getenv("SLOSERVE_INFLESS_PEAKS"); s != "" {
		peaks = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || v <= 0 {
				t.Fatalf("SLOSERVE_INFLESS_PEAKS: bad peak %q", f)
			}
			peaks = append(peaks, v)
		}
	}
	dur := 15 * time.Minute
	if s := os.Getenv("SLOSERVE_INFLESS_DUR"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SLOSERVE_INFLESS_DUR: %q", s)
		}
		dur = d
	}
	var paths []string
	for _, f := range []string{"burst300-2.csv", "burst300-3.csv", "burst300-4.csv"} {
		paths = append(paths, filepath.Join(data, "traces", "azure-functions", f))
	}
	withOpt := func(name string, edit func(*INFlessOptions)) inflessVariant {
		return inflessVariant{name, func() (ClusterPolicy, error) {
			o := DefaultINFlessOptions()
			edit(&o)
			return NewINFlessCluster(name, o)
		}}
	}
	variants := append(inflessVariants(),
		inflessVariant{"openfaas+", func() (ClusterPolicy, error) { return NewUniformCluster(DefaultOpenFaaSOptions()) }},
		withOpt("infless-CRE", func(o *INFlessOptions) { o.Metric = infless.MetricOriginal }),
		withOpt("infless-β=G/C", func(o *INFlessOptions) { o.Beta = float64(DefaultServer.GPU) / float64(DefaultServer.CPU) }))
	for _, peak := range peaks {
		t.Logf("burst300-2..4, peak %.0f rps per function, first %v", peak, dur)
		t.Logf("| policy | requests | SLO violations | rps/resource | vs uniform | vs openfaas+ | fragment ratio (β) | CPU free | GPU free | active servers | mean instances | batch sizes launched |")
		t.Logf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
		res := map[string]*ClusterResult{}
		var order []string
		for _, v := range variants {
			fns, err := LoadWorkload(filepath.Join(data, "profiles", "infless"), paths, OSVTQA, WorkloadOptions{PeakRPS: peak, Duration: dur, SLOTarget: 0.95, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			p, err := v.mk()
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultClusterConfig()
			cfg.Servers = LoadClusterServers
			cfg.Trace = fmt.Sprintf("burst300 peak %.0f", peak)
			r, err := RunCluster(context.Background(), cfg, fns, p)
			if err != nil {
				t.Fatal(err)
			}
			res[v.name] = r
			order = append(order, v.name)
			if v.name == "infless" {
				for _, f := range r.Functions {
					t.Logf("  infless %-12s %-16s requests %8d violations %6.2f %% p99 %6.0f ms mean batch %5.2f", f.Policy, f.Trace, f.Requests, 100*(1-f.SLOAttainment), f.LatencyMS.P99, f.MeanBatchSize)
				}
			}
		}
		base, of := res["uniform"].Summary.Extra["rps_per_resource"], res["openfaas+"].Summary.Extra["rps_per_resource"]
		for _, n := range order {
			s := res[n].Summary
			x := s.Extra
			t.Logf("| %s | %d | %.2f %% | %.4f | %.2f× | %.2f× | %.1f %% | %.1f %% | %.1f %% | %.1f | %.1f | %v |", n, s.Requests, 100*(1-s.SLOAttainment),
				x["rps_per_resource"], x["rps_per_resource"]/max(base, 1e-12), x["rps_per_resource"]/max(of, 1e-12),
				100*x["fragment_ratio"], 100*x["fragment_cpu"], 100*x["fragment_gpu"], x["mean_active_servers"], x["mean_instances"], res[n].BatchInstances)
		}
	}
}

// LoadClusterServers is the cluster of the busy-load evaluation: 1,024 servers of 16 threads and
// one GPU (512 INFless testbed machines), enough that no policy runs out of room at 1,600 rps per
// function; only active servers count.
const LoadClusterServers = 1024
