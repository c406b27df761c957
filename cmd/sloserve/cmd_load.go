package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"time"

	"github.com/sloserve/sloserve/internal/load"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

// runLoad drives open-loop load against a live gateway (or any OIP v2 server).
func runLoad(ctx context.Context, args []string, e env) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	target := fs.String("target", "http://127.0.0.1:8080", "base `URL` of the server under load")
	model := fs.String("model", demoModel, "bundled `model` to request (its sample images are the payloads)")
	rps := fs.Float64("rps", 100, "Poisson `rate` in requests/s (ignored with --trace)")
	dur := fs.Duration("duration", 10*time.Second, "how long to send")
	tracePath := fs.String("trace", "", "arrival trace `file` (rate series t,count or inter-arrivals; see internal/trace)")
	rateScale := fs.Float64("scale", 1, "with --trace: multiply the trace's request rate by this `factor`")
	timeScale := fs.Float64("time-scale", 1, "with --trace: stretch the trace's time by this `factor` (0.5 replays twice as fast)")
	from := fs.Duration("from", 0, "with --trace: start the replay at this offset into the (time-scaled) trace")
	max := fs.Int("max-requests", 1_000_000, "stop after this many requests")
	sloMS := fs.Float64("slo-ms", 200, "SLO threshold in `ms` the latencies are judged against")
	target98 := fs.Float64("slo-target", 0.98, "SLO target fraction")
	seed := fs.Uint64("seed", 1, "random seed of the arrival process")
	asJSON := fs.Bool("json", false, "print the Summary as JSON")
	failOnSLO := fs.Bool("fail-on-slo", false, "exit 1 when SLO attainment is below --slo-target (for CI)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if u, err := url.Parse(*target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("load: --target %q must be an http(s)://host:port URL", *target)
	}
	switch {
	case *dur <= 0:
		return usagef("load: --duration must be > 0, got %v", *dur)
	case *max < 1:
		return usagef("load: --max-requests must be ≥ 1, got %d", *max)
	case *tracePath == "" && !(*rps > 0):
		return usagef("load: --rps must be > 0, got %v", *rps)
	}
	spec := slo.Spec{Threshold: time.Duration(*sloMS * float64(time.Millisecond)), Target: *target98}
	if err := spec.Validate(); err != nil {
		return usagef("load: --slo-ms/--slo-target: %v", err)
	}
	payloads, err := samplePayloads(*model, 1)
	if err != nil {
		return usagef("load: --model: %v", err)
	}
	arrivals, name := trace.Poisson(*rps, *seed), fmt.Sprintf("poisson-%g", *rps)
	if *tracePath != "" {
		tr, err := trace.Open(*tracePath)
		if err != nil {
			return usagef("load: --trace: %v", err)
		}
		if tr, err = tr.With(trace.Options{RateScale: *rateScale, TimeScale: *timeScale, From: *from}); err != nil {
			return usagef("load: --scale/--time-scale/--from: %v", err)
		}
		arrivals, name = tr.Arrivals(*seed), *tracePath
	}
	res, err := load.Run(ctx, load.Config{Target: *target, Model: *model, Arrivals: arrivals, Duration: *dur,
		MaxRequests: *max, Payloads: payloads, SLO: spec, Policy: "live", Trace: name})
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("load: %w", err)
	}
	s := res.Summary
	s.Extra = map[string]float64{"worker_busy_s": res.WorkSeconds, "client_late_sends": float64(res.Late),
		"client_lateness_p99_ms": ms(res.LateP99), "slo_attainment_from_schedule": res.ScheduledAttainment,
		"wire_p50_ms": float64(res.WireP50.Microseconds()) / 1000, "wire_p99_ms": float64(res.WireP99.Microseconds()) / 1000}
	if s.Completed > 0 {
		s.Extra["work_us_per_request"] = res.WorkSeconds / float64(s.Completed) * 1e6
	}
	if *asJSON {
		if err := slo.WriteJSON(e.stdout, s); err != nil {
			return err
		}
	} else {
		printSummary(e.stdout, s)
	}
	return loadVerdict(s, *target, spec.Target, *failOnSLO)
}

// errSLOMissed is returned by 'load --fail-on-slo' when attainment is below the target (exit 1).
var errSLOMissed = errors.New("SLO missed")

// loadVerdict turns a finished load run into its exit status: an error when every request failed
// (a dead or wrong target) and, with failOnSLO, when attainment is below the SLO target.
func loadVerdict(s slo.Summary, target string, sloTarget float64, failOnSLO bool) error {
	if s.Requests > 0 && s.Completed == 0 {
		return fmt.Errorf("load: all %d requests failed (%d failed, %d rejected); is %s serving?", s.Requests, s.Failed, s.Rejected, target)
	}
	if failOnSLO && s.SLOAttainment < sloTarget {
		return fmt.Errorf("load: %w: attainment %.2f %% < target %.2f %%", errSLOMissed, 100*s.SLOAttainment, 100*sloTarget)
	}
	return nil
}
