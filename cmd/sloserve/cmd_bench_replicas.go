package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/load/bench"
	"github.com/sloserve/sloserve/internal/provider"
	"github.com/sloserve/sloserve/internal/provider/local"
	"github.com/sloserve/sloserve/internal/slo"
)

// benchReplicas runs `bench gateway --replicas N`: o.workers workers, each running at most
// o.slots batches at once, shared by 1…N gateway processes (bench.BenchReplicas).
func benchReplicas(ctx context.Context, e env, o benchOptions, payloads []load.Payload) error {
	prov, addrs, pids, rt, err := benchWorkers(ctx, o.model, o.workers, o.slots, o.rowTime)
	if prov != nil {
		defer prov.Close()
	}
	if err != nil {
		return err
	}
	r, err := bench.BenchReplicas(ctx, bench.ReplicasConfig{Workers: addrs, Model: o.model, Slots: o.slots, Policy: o.policy,
		Threshold: 500 * time.Millisecond, Replicas: o.replicas, Counts: o.counts, GatewayProcs: o.gatewayProcs, WorkerPIDs: pids, Payloads: payloads, Concurrency: o.conc, Duration: o.dur, Rounds: o.rounds})
	if err != nil {
		return fmt.Errorf("bench gateway: %w", err)
	}
	if o.asJSON {
		return slo.WriteJSON(e.stdout, r)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "replicas\trps (%d clients each)\t× 1 replica\tp50 ms\tp99 ms\t429\terrors\tlost\tcpu s: each gateway\tworkers\tload gen\tof wall s × cores\t\n", r.Concurrency)
	for _, p := range r.Points {
		var gw []string
		for _, c := range p.GatewayCPU[:p.Replicas] {
			gw = append(gw, fmt.Sprintf("%.2f", c))
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.2f\t%.3f\t%.3f\t%d\t%d\t%d\t%s\t%.2f\t%.2f\t%.2f\t\n", p.Replicas, p.RPS, p.ToOne, p.P50MS, p.P99MS, p.Rejected, p.Errors, p.Lost,
			strings.Join(gw, " "), p.WorkerCPU, p.LoadCPU, p.WallS*float64(runtime.NumCPU()))
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "medians of %d rounds (cpu: means per measurement); %d workers × %d slots (their --max-in-flight), --min-row-time %v, policy %s, runtime %s, model %s; gateways GOMAXPROCS %d; %d CPUs: gateways, workers and the load generator share them\n",
		r.Rounds, r.Workers, r.Slots, o.rowTime, o.policy, rt, o.model, r.GatewayProcs, runtime.NumCPU())
	return nil
}

// benchWorkers starts n local workers of model, each answering 429 beyond slots batches in
// flight and taking at least rowTime per row, and returns their provider (to close), addresses,
// process ids and runtime.
func benchWorkers(ctx context.Context, model string, n, slots int, rowTime time.Duration) (*local.Provider, []string, []int, string, error) {
	rt, lib := workerRuntime()
	wargs := []string{"--runtime", rt, "--max-in-flight", strconv.Itoa(slots), "--min-row-time", rowTime.String()}
	if lib != "" {
		wargs = append(wargs, "--onnxruntime-lib", lib)
	}
	prov, err := local.New(local.Config{Args: wargs}, nil)
	if err != nil {
		return nil, nil, nil, rt, err
	}
	var addrs []string
	var pids []int
	for range n {
		in, err := prov.Launch(ctx, provider.Spec{Model: model})
		if err != nil {
			return prov, nil, nil, rt, err
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		in, err = prov.WaitReady(wctx, in.ID)
		cancel()
		if err != nil {
			return prov, nil, nil, rt, fmt.Errorf("bench gateway: start worker: %w", err)
		}
		addrs = append(addrs, in.Addr)
		if pid, ok := prov.PID(in.ID); ok {
			pids = append(pids, pid)
		}
	}
	return prov, addrs, pids, rt, nil
}
