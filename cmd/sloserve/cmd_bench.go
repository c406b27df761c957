package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/load"
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
	fs := flag.NewFlagSet("bench gateway", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	model := fs.String("model", "logreg", "bundled `model` the worker serves (the smallest makes the proxies' cost most visible)")
	conc := fs.Int("concurrency", 16, "closed-loop `clients` of the throughput runs")
	dur := fs.Duration("duration", 2*time.Second, "length of each throughput run")
	latDur := fs.Duration("latency-duration", time.Second, "length of each one-client latency run")
	rounds := fs.Int("rounds", 5, "times the three paths are measured in turn (figures are medians over rounds)")
	protocol := fs.String("protocol", "", "`protocol` to measure through the gateway instead of the proxy comparison: rest-json, rest-binary, grpc-raw or all (prints each throughput and its ratio to rest-json's, from one run)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	switch {
	case *conc < 1:
		return usagef("bench gateway: --concurrency must be ≥ 1, got %d", *conc)
	case *dur <= 0:
		return usagef("bench gateway: --duration must be > 0, got %v", *dur)
	case *latDur <= 0:
		return usagef("bench gateway: --latency-duration must be > 0, got %v", *latDur)
	case *rounds < 1:
		return usagef("bench gateway: --rounds must be ≥ 1, got %d", *rounds)
	}
	var protocols []string
	switch *protocol {
	case "":
	case "all":
		protocols = gateway.Protocols
	default:
		if !slices.Contains(gateway.Protocols, *protocol) {
			return usagef("bench gateway: --protocol must be one of %v or all, got %q", gateway.Protocols, *protocol)
		}
		protocols = []string{*protocol}
	}
	payloads, err := samplePayloads(*model)
	if err != nil {
		return usagef("bench gateway: --model: %v", err)
	}
	rt, lib := workerRuntime()
	wargs := []string{"--runtime", rt}
	if lib != "" {
		wargs = append(wargs, "--onnxruntime-lib", lib)
	}
	prov, err := local.New(local.Config{Args: wargs}, nil)
	if err != nil {
		return err
	}
	defer prov.Close()
	in, err := prov.Launch(ctx, provider.Spec{Model: *model})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	in, err = prov.WaitReady(wctx, in.ID)
	cancel()
	if err != nil {
		return fmt.Errorf("bench gateway: start worker: %w", err)
	}
	if protocols != nil {
		return benchProtocols(ctx, e, gateway.ProtocolBenchConfig{Worker: in.Addr, Model: *model, Payloads: payloads, Protocols: protocols,
			Concurrency: *conc, Duration: *dur, Rounds: *rounds}, *asJSON, rt)
	}
	r, err := gateway.Bench(ctx, gateway.BenchConfig{Worker: in.Addr, Model: *model, Payloads: payloads,
		Concurrency: *conc, Duration: *dur, LatencyDuration: *latDur, Rounds: *rounds})
	if err != nil {
		return fmt.Errorf("bench gateway: %w", err)
	}
	if *asJSON {
		return slo.WriteJSON(e.stdout, r)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "path\trps (%d clients)\tp50 ms (1 client)\tp99 ms\t\n", r.Concurrency)
	fmt.Fprintf(tw, "direct\t%.0f\t%.3f\t%.3f\t\n", r.DirectRPS, r.DirectP50MS, r.DirectP99MS)
	fmt.Fprintf(tw, "gateway (batching none)\t%.0f\t%.3f\t%.3f\t\n", r.GatewayRPS, r.GatewayP50MS, r.GatewayP99MS)
	fmt.Fprintf(tw, "plain ReverseProxy\t%.0f\t%.3f\t%.3f\t\n", r.PlainProxyRPS, r.PlainProxyP50MS, r.PlainProxyP99MS)
	tw.Flush()
	fmt.Fprintf(e.stdout, "added_p50_ms %.3f  added_p99_ms %.3f  gateway_rps / plain_proxy_rps %.2f  (medians of %d rounds; runtime %s, model %s)\n",
		r.AddedP50MS, r.AddedP99MS, r.GatewayToProxy, r.Rounds, rt, *model)
	return nil
}

// benchProtocols runs gateway.BenchProtocols and prints each protocol's throughput and its ratio
// to rest-json's.
func benchProtocols(ctx context.Context, e env, cfg gateway.ProtocolBenchConfig, asJSON bool, rt string) error {
	r, err := gateway.BenchProtocols(ctx, cfg)
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

// samplePayloads builds single-image requests for a bundled model from the bundled labelled sample.
func samplePayloads(model string) ([]load.Payload, error) {
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
	return load.ImagePayloads(set, mi.Inputs[0].Name, set.Len())
}
