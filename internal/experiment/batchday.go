package experiment

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

func init() {
	register(Experiment{Name: "batch-twitter-day", Summary: "BATCH's Twitter day (24 hourly MAP(2) fits) through batch and lambda (docs/batch.md)",
		Doc: "docs/batch.md \"Validation of the whole day\"; DATA/traces/batch-map-fits/twitter, DATA/profiles/batch-lambda-polynomials.json; about a minute", Run: batchDayExperiment})
}

// BatchDayRow is one run of the Twitter day: a policy at a service-noise CV.
type BatchDayRow struct {
	NoiseCV float64
	Policy  string
	Summary slo.Summary
}

// BatchDay replays the arrival process of maps (one MAP(2) per hour, trace.PiecewiseMAP, seed 7)
// through the lambda and batch policies on model's serverless profile, for each noise CV, and
// returns one row per (noise, policy) — BATCH §VI-D's validation in the project simulator.
func BatchDay(ctx context.Context, model profile.Model, maps []trace.MAP2, spec slo.Spec, noises []float64) ([]BatchDayRow, error) {
	cfg := sim.DefaultConfig()
	cfg.SLO = spec
	var rows []BatchDayRow
	for _, noise := range noises {
		cfg.NoiseCV = noise
		for _, name := range []string{"lambda", "batch"} {
			pol, err := sim.New(name, sim.Env{Model: model, SLO: cfg.SLO})
			if err != nil {
				return rows, err
			}
			arr := trace.Until(trace.PiecewiseMAP(maps, time.Hour, 7), time.Duration(len(maps))*time.Hour)
			res, err := sim.Run(ctx, cfg, nil, model, pol, arr)
			if err != nil {
				return rows, fmt.Errorf("%s at noise %v: %w", name, noise, err)
			}
			rows = append(rows, BatchDayRow{NoiseCV: noise, Policy: name, Summary: res.Summary})
		}
	}
	return rows, nil
}

// batchDayExperiment prints docs/batch.md's whole-day table: TF-resnetV2 at 3008 MB, p95 ≤ 3.053 s.
func batchDayExperiment(ctx context.Context, o Options, w io.Writer) error {
	pf, err := os.Open(o.data("profiles/batch-lambda-polynomials.json"))
	if err != nil {
		return fmt.Errorf("batch-twitter-day: %w", err)
	}
	polys, err := profile.ReadBatchPolynomials(pf)
	pf.Close()
	if err != nil {
		return err
	}
	hours := 24
	if o.Duration > 0 {
		hours = max(1, int(o.Duration/time.Hour))
	}
	var maps []trace.MAP2
	for h := 1; h <= hours; h++ {
		m, err := trace.OpenMAP2(o.data("traces/batch-map-fits/twitter"), h)
		if err != nil {
			return fmt.Errorf("batch-twitter-day: %w", err)
		}
		maps = append(maps, m)
	}
	model := profile.Model{Name: "TF-resnetV2", Serverless: polys["TF-resnetV2"]}
	rows, err := BatchDay(ctx, model, maps, slo.Spec{Threshold: 3053 * time.Millisecond, Target: 0.95}, []float64{0, sim.DefaultNoiseCV})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "| service noise CV | policy | requests | SLO attainment | p95 ms | mean batch | cost $ | $/request | vs lambda | cold starts |")
	fmt.Fprintln(w, "|---|---|---:|---|---|---|---|---|---|---:|")
	var lambda float64
	for _, r := range rows {
		s := r.Summary
		if r.Policy == "lambda" {
			lambda = s.CostUSD.Total
		}
		fmt.Fprintf(w, "| %g | %s (3008 MB) | %d | %.4f | %.0f | %.2f | %.2f | %.4g | %.1f %% | %d |\n", r.NoiseCV, r.Policy, s.Requests, s.SLOAttainment,
			s.LatencyMS.P95, s.MeanBatchSize, s.CostUSD.Total, s.CostUSD.Total/float64(max(s.Completed, 1)), 100*s.CostUSD.Total/max(lambda, 1e-12), s.ColdStarts)
	}
	return nil
}
