package experiment

import (
	"context"
	"errors"
	"fmt"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/profile"
	"github.com/sloserve/sloserve/internal/sim"
	"github.com/sloserve/sloserve/internal/trace"
)

// Named is one policy's result, as Compare returns it and the plots draw it.
type Named struct {
	Policy string
	Result *sim.Result
}

// Skipped reports a policy `--policy all` left out because it is not implemented yet.
type Skipped struct {
	Policy string
	Err    error
}

// Compare runs each named policy on the same trace (the same arrivals: every run draws them
// with cfg.Seed) and returns their results in order. Policies that are not implemented yet are
// returned in skipped when skipMissing is set, and are errors otherwise.
func Compare(ctx context.Context, cfg sim.Config, cat *cost.Catalog, model profile.Model, tr *trace.Trace,
	names []string, decoder func(policy string) func(any) error, skipMissing bool) (runs []Named, skipped []Skipped, err error) {
	if cfg.Trace == "" {
		cfg.Trace = tr.Name
	}
	env := sim.Env{Catalog: cat, Model: model, SLO: cfg.SLO, Load: sim.Load(tr)}
	for _, name := range names {
		if decoder != nil {
			env.Decode = decoder(name)
		}
		p, err := sim.New(name, env)
		if errors.Is(err, sim.ErrNotImplemented) && skipMissing {
			skipped = append(skipped, Skipped{Policy: name, Err: err})
			continue
		}
		if err != nil {
			return runs, skipped, err
		}
		res, err := sim.Run(ctx, cfg, cat, model, p, tr.Arrivals(cfg.Seed))
		if err != nil {
			return runs, skipped, fmt.Errorf("policy %s: %w", name, err)
		}
		runs = append(runs, Named{Policy: name, Result: res})
	}
	return runs, skipped, nil
}
