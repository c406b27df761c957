package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/load/bench"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/local"
	"github.com/sloserve/sloserve/internal/slo"
	bundled "github.com/sloserve/sloserve/models"
)

// runBench runs measurements; the only one is 'bench gateway'.
func runBench(ctx context.Context, args []string, e env) error {
	if len(args) == 0 || args[0] != "gateway" {
		if isHelp(args) {
			return showHelp("bench")
		}
		return usagef("bench: want 'bench gateway', got %q", args)
	}
	o, err := parseBenchFlags(args[1:])
	if err != nil {
		return err
	}
	payloads, err := samplePayloads(o.model, o.rows)
	if err != nil {
		return usagef("bench gateway: --model: %v", err)
	}
	if o.replicas > 0 {
		return benchReplicas(ctx, e, o, payloads)
	}
	prov, addr, rt, err := benchWorker(ctx, o.model)
	if prov != nil {
		defer prov.Close()
	}
	if err != nil {
		return err
	}
	if o.protocols != nil {
		return benchProtocols(ctx, e, bench.ProtocolBenchConfig{Worker: addr, Model: o.model, Payloads: payloads, Protocols: o.protocols,
			Concurrency: o.conc, Duration: o.dur, Rounds: o.rounds}, o.asJSON, rt)
	}
	r, err := bench.Bench(ctx, bench.BenchConfig{Worker: addr, Model: o.model, Payloads: payloads,
		Concurrency: o.conc, Duration: o.dur, LatencyDuration: o.latDur, Rounds: o.rounds})
	if err != nil {
		return fmt.Errorf("bench gateway: %w", err)
	}
	if o.asJSON {
		return slo.WriteJSON(e.stdout, r)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "path\trps (%d clients)\tp50 ms (1 client)\tp99 ms\t\n", r.Concurrency)
	fmt.Fprintf(tw, "direct\t%.0f\t%.3f\t%.3f\t\n", r.DirectRPS, r.DirectP50MS, r.DirectP99MS)
	fmt.Fprintf(tw, "gateway (batching none)\t%.0f\t%.3f\t%.3f\t\n", r.GatewayRPS, r.GatewayP50MS, r.GatewayP99MS)
	fmt.Fprintf(tw, "plain ReverseProxy\t%.0f\t%.3f\t%.3f\t\n", r.PlainProxyRPS, r.PlainProxyP50MS, r.PlainProxyP99MS)
	tw.Flush()
	fmt.Fprintf(e.stdout, "added_p50_ms %.3f  added_p99_ms %.3f  gateway_rps / plain_proxy_rps %.2f  (medians of %d rounds; runtime %s, model %s)\n",
		r.AddedP50MS, r.AddedP99MS, r.GatewayToProxy, r.Rounds, rt, o.model)
	return nil
}

// benchOptions are bench gateway's flags.
type benchOptions struct {
	asJSON       bool
	model        string
	conc, rounds int
	dur, latDur  time.Duration
	protocols    []string      // nil: the proxy comparison
	rows         int           // images per request
	replicas     int           // > 0: the gateway replicas measurement (benchReplicas), up to this many
	counts       []int         // the replica counts it measures
	rowTime      time.Duration // its workers' --min-row-time
	gatewayProcs int           // its gateways' GOMAXPROCS (0: all cores)
	workers      int           // its workers
	slots        int           // its slots per worker
	policy       string        // its batching policy
}

// parseBenchFlags parses and checks bench gateway's flags; a bad one is a usage error naming it.
func parseBenchFlags(args []string) (benchOptions, error) {
	fs := flag.NewFlagSet("bench gateway", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	model := fs.String("model", "logreg", "bundled `model` the worker serves (the smallest makes the proxies' cost most visible)")
	conc := fs.Int("concurrency", 16, "closed-loop `clients` of the throughput runs")
	dur := fs.Duration("duration", 2*time.Second, "length of each throughput run")
	latDur := fs.Duration("latency-duration", time.Second, "length of each one-client latency run")
	rounds := fs.Int("rounds", 5, "times the three paths are measured in turn (figures are medians over rounds)")
	rows := fs.Int("rows", 0, "images per request (default 1, and 192 with --protocol: 192 Fashion-MNIST images are 150 528 floats, one 224×224 RGB image's worth, the input size at which a front protocol's encoding is what it costs)")
	protocol := fs.String("protocol", "", "`protocol` to measure through the gateway instead of the proxy comparison: rest-json, rest-binary, grpc-raw or all (prints each throughput and its ratio to rest-json's, from one run)")
	replicas := fs.String("replicas", "", "measure 1, 2, … `N` gateway processes (sloserve serve --instances) sharing the same workers, or the listed counts (e.g. 1,2,3), in one run: throughput, its ratio to one replica, p50/p99, CPU seconds per process")
	rowTime := fs.Duration("row-time", 0, "with --replicas: the workers' --min-row-time (a batch of r rows takes r × `d`, sleeping: workers that are not CPU-bound, so the gateways are the bottleneck)")
	gatewayProcs := fs.Int("gateway-procs", 1, "with --replicas: each gateway's GOMAXPROCS (one replica = one machine's share of cores; 0 = all cores)")
	workers := fs.Int("workers", 2, "with --replicas: worker processes the replicas share")
	slots := fs.Int("slots", 2, "with --replicas: batches a worker runs at once (its --max-in-flight) and each replica's model slots")
	policy := fs.String("policy", "mlproxy", "with --replicas: the replicas' batching `policy` (none, fixed, mlproxy, …)")
	if err := parseFlags(fs, args); err != nil {
		return benchOptions{}, err
	}
	o := benchOptions{asJSON: *asJSON, model: *model, conc: *conc, rounds: *rounds, dur: *dur, latDur: *latDur, rows: *rows,
		workers: *workers, slots: *slots, policy: *policy, rowTime: *rowTime, gatewayProcs: *gatewayProcs}
	var err error
	if o.replicas, o.counts, err = parseReplicaCounts(*replicas); err != nil {
		return o, usagef("bench gateway: --replicas: %v", err)
	}
	switch {
	case o.rows < 0:
		return o, usagef("bench gateway: --rows must be ≥ 0, got %d", o.rows)
	case o.conc < 1:
		return o, usagef("bench gateway: --concurrency must be ≥ 1, got %d", o.conc)
	case o.dur <= 0:
		return o, usagef("bench gateway: --duration must be > 0, got %v", o.dur)
	case o.latDur <= 0:
		return o, usagef("bench gateway: --latency-duration must be > 0, got %v", o.latDur)
	case o.rounds < 1:
		return o, usagef("bench gateway: --rounds must be ≥ 1, got %d", o.rounds)
	case o.rowTime < 0:
		return o, usagef("bench gateway: --row-time must be ≥ 0, got %v", o.rowTime)
	case o.gatewayProcs < 0:
		return o, usagef("bench gateway: --gateway-procs must be ≥ 0, got %d", o.gatewayProcs)
	case o.workers < 1 || o.workers > 16:
		return o, usagef("bench gateway: --workers must be in [1, 16], got %d", o.workers)
	case o.slots < 1:
		return o, usagef("bench gateway: --slots must be ≥ 1, got %d", o.slots)
	case o.replicas > 0 && *protocol != "":
		return o, usagef("bench gateway: --replicas and --protocol are separate measurements; pick one")
	}
	if !slices.Contains(batching.Names(), o.policy) {
		return o, usagef("bench gateway: --policy must be one of %v, got %q", batching.Names(), o.policy)
	}
	switch *protocol {
	case "":
	case "all":
		o.protocols = bench.Protocols
	default:
		if !slices.Contains(bench.Protocols, *protocol) {
			return o, usagef("bench gateway: --protocol must be one of %v or all, got %q", bench.Protocols, *protocol)
		}
		o.protocols = []string{*protocol}
	}
	if o.rows == 0 {
		o.rows = 1
		if o.protocols != nil {
			o.rows = imageRows
		}
	}
	return o, nil
}

// parseReplicaCounts parses --replicas: "" (not measured), N (1, 2, … N) or an increasing list
// of counts ("1,2,3"), each in [1, 16]. It returns the largest count and the counts.
func parseReplicaCounts(v string) (int, []int, error) {
	if v == "" {
		return 0, nil, nil
	}
	var counts []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 16 {
			return 0, nil, fmt.Errorf("want N or a list of counts in [1, 16], got %q", v)
		}
		if len(counts) > 0 && n <= counts[len(counts)-1] {
			return 0, nil, fmt.Errorf("counts must increase, got %q", v)
		}
		counts = append(counts, n)
	}
	if len(counts) == 1 {
		n := counts[0]
		counts = counts[:0]
		for i := 1; i <= n; i++ {
			counts = append(counts, i)
		}
	}
	return counts[len(counts)-1], counts, nil
}

// benchWorker starts one local worker of model and returns its provider (to close), its address
// and the runtime it runs.
func benchWorker(ctx context.Context, model string) (*local.Provider, string, string, error) {
	rt, lib := workerRuntime()
	wargs := []string{"--runtime", rt}
	if lib != "" {
		wargs = append(wargs, "--onnxruntime-lib", lib)
	}
	prov, err := local.New(local.Config{Args: wargs}, nil)
	if err != nil {
		return nil, "", rt, err
	}
	in, err := prov.Launch(ctx, provider.Spec{Model: model})
	if err != nil {
		return prov, "", rt, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	in, err = prov.WaitReady(wctx, in.ID)
	cancel()
	if err != nil {
		return prov, "", rt, fmt.Errorf("bench gateway: start worker: %w", err)
	}
	return prov, in.Addr, rt, nil
}

// benchProtocols runs bench.BenchProtocols and prints each protocol's throughput and its ratio
// to rest-json's.
func benchProtocols(ctx context.Context, e env, cfg bench.ProtocolBenchConfig, asJSON bool, rt string) error {
	r, err := bench.BenchProtocols(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench gateway: %w", err)
	}
	if asJSON {
		return slo.WriteJSON(e.stdout, r)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "protocol\trps (%d clients)\t× rest-json\terrors\t\n", r.Concurrency)
	for _, p := range cfg.Protocols {
		ratio := "-"
		if v, ok := r.ToRESTJSON[p]; ok {
			ratio = fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%d\t\n", p, r.RPS[p], ratio, r.Errors[p])
	}
	tw.Flush()
	for _, p := range cfg.Protocols {
		if msg := r.FirstError[p]; msg != "" {
			fmt.Fprintf(e.stdout, "%s: first error: %s\n", p, msg)
		}
	}
	fmt.Fprintf(e.stdout, "medians of %d rounds; runtime %s, model %s\n", r.Rounds, rt, cfg.Model)
	return nil
}

// imageRows is bench --protocol's default rows per request: 192 × 784 = 150 528 floats, the size
// of one 224×224×3 image (ResNet's input), 602 KB raw, ~1 MB as JSON text.
const imageRows = 192

// samplePayloads builds requests of rows images each for a bundled model from the bundled
// labelled sample.
func samplePayloads(model string, rows int) ([]load.Payload, error) {
	md, err := bundled.Manifest()
	if err != nil {
		return nil, err
	}
	mi, ok := md.Model(model)
	if !ok {
		return nil, fmt.Errorf("no bundled model %q (have %v)", model, bundled.Names())
	}
	if len(mi.Inputs) != 1 {
		return nil, fmt.Errorf("model %q has %d inputs; the sample feeds one", model, len(mi.Inputs))
	}
	set, err := bundled.Sample()
	if err != nil {
		return nil, err
	}
	if rows > 1 {
		return load.BatchPayloads(set, mi.Inputs[0].Name, rows)
	}
	return load.ImagePayloads(set, mi.Inputs[0].Name, set.Len())
}
