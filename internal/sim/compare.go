package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/trace"
)

// Load returns the trace's mean rate and its highest one-minute mean rate.
func Load(t *trace.Trace) LoadStats {
	s := LoadStats{MeanRPS: t.MeanRate()}
	if t.IsSeries() {
		w := max(1, int(math.Ceil(float64(time.Minute)/float64(t.Step))))
		var sum float64
		for i, r := range t.Rates {
			sum += r
			if i >= w {
				sum -= t.Rates[i-w]
			}
			if n := min(i+1, w); i+1 >= w || i == len(t.Rates)-1 {
				s.PeakRPS = max(s.PeakRPS, sum/float64(n))
			}
		}
		return s
	}
	for _, c := range trace.Counts(t.Arrivals(0), time.Minute, t.Duration()) {
		s.PeakRPS = max(s.PeakRPS, float64(c)/60)
	}
	return s
}

// Skipped reports a policy `--policy all` left out because it is not implemented yet.
type Skipped struct {
	Policy string
	Err    error
}

// Compare runs each named policy on the same trace (the same arrivals: every run draws them
// with cfg.Seed) and returns their results in order. Policies that are not implemented yet are
// returned in skipped when skipMissing is set, and are errors otherwise.
func Compare(ctx context.Context, cfg Config, cat *cost.Catalog, model profile.Model, tr *trace.Trace,
	names []string, decoder func(policy string) func(any) error, skipMissing bool) (runs []Named, skipped []Skipped, err error) {
	if cfg.Trace == "" {
		cfg.Trace = tr.Name
	}
	env := Env{Catalog: cat, Model: model, SLO: cfg.SLO, Load: Load(tr)}
	for _, name := range names {
		if decoder != nil {
			env.Decode = decoder(name)
		}
		p, err := New(name, env)
		if errors.Is(err, ErrNotImplemented) && skipMissing {
			skipped = append(skipped, Skipped{Policy: name, Err: err})
			continue
		}
		if err != nil {
			return runs, skipped, err
		}
		res, err := Run(ctx, cfg, cat, model, p, tr.Arrivals(cfg.Seed))
		if err != nil {
			return runs, skipped, fmt.Errorf("policy %s: %w", name, err)
		}
		runs = append(runs, Named{Policy: name, Result: res})
	}
	return runs, skipped, nil
}
