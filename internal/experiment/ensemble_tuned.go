package experiment

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	"github.com/sloserve/sloserve/internal/experiment/tune"
	simens "github.com/sloserve/sloserve/internal/sim/ensemble"
	"github.com/sloserve/sloserve/internal/trace"
)

// TunedEnsembleBaseline is a `<policy>-tuned` row of the Cocktail setting (issue #17 Build 1):
// a registered ensemble policy whose knobs — the pools' staffing β (the autoscaler's headroom),
// the forecast's horizon and method, the pools' idle timeout and the instance types procured (the
// smaller types left out: every type of at least min_type_scale × the reference's size) —
// are searched on the trace's tuning part (its first half, SplitTrace) for the cheapest
// configuration meeting the latency SLO there, then run on the evaluation part.
type TunedEnsembleBaseline struct {
	Name, Policy string
}

// DefaultTunedEnsembleBaselines returns clipper-fair-tuned, clipper-x-tuned and
// infaas-spot-tuned, and cocktail-tuned: Cocktail's own knobs searched the same way, so that the
// comparison is tuned against tuned.
func DefaultTunedEnsembleBaselines() []TunedEnsembleBaseline {
	return []TunedEnsembleBaseline{{"cocktail-tuned", "cocktail"}, {"clipper-fair-tuned", "clipper-fair"}, {"clipper-x-tuned", "clipper-x"},
		{"infaas-spot-tuned", "infaas-spot"}}
}

// ensembleKnobs are the searched knobs: staffing β from the safest (most slots) to the
// cheapest, bisected; the rest a grid searched by coordinate descent (their first values are
// the paper defaults').
var ensembleKnobs = []tune.Knob{
	{Path: "staffing", Values: []any{3.0, 2.0, 1.5, 1.0, 0.5, 0.0}},
	{Path: "idle_timeout", Values: []any{"10m0s", "2m0s", "5m0s"}},
	{Path: "horizon", Values: []any{"2m0s", "1m0s", "4m0s"}},
	{Path: "forecast", Values: []any{simens.DefaultForecastMethod, "ewma"}},
	{Path: "min_type_scale", Values: []any{0.0, 2.0, 1.0}},
}

// applyEnsembleOptions sets o's knobs on the policy and the run's config.
func applyEnsembleOptions(p *simens.EnsemblePolicy, cfg *simens.EnsembleConfig, o tune.Options) error {
	for k, v := range o {
		s := fmt.Sprint(v)
		switch k {
		case "staffing":
			f, ok := v.(float64)
			if !ok {
				return fmt.Errorf("ensemble knob staffing: %v is not a number", v)
			}
			p.Staffing = f
		case "idle_timeout", "horizon":
			d, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("ensemble knob %s: %w", k, err)
			}
			if k == "horizon" {
				p.Horizon = d
			} else {
				p.Ensemble.IdleTimeout = d
			}
		case "forecast":
			p.Forecast = s
		case "min_type_scale":
			f, ok := v.(float64)
			if !ok {
				return fmt.Errorf("ensemble knob min_type_scale: %v is not a number", v)
			}
			var keep []simens.EnsembleType
			for _, t := range cfg.Types {
				if t.Scale >= f {
					keep = append(keep, t)
				}
			}
			if len(keep) == 0 {
				return fmt.Errorf("ensemble knob min_type_scale: no type of scale ≥ %v", f)
			}
			cfg.Types = keep
		default:
			return fmt.Errorf("ensemble knob %q: unknown", k)
		}
	}
	return nil
}

// runEnsembleOptions runs the named ensemble policy with knobs o on tr.
func runEnsembleOptions(ctx context.Context, data *simens.CocktailData, tr *trace.Trace, name string, o tune.Options) (EnsembleRow, error) {
	cfg := simens.DefaultEnsembleConfig()
	cfg.SpotPrices = data.SpotPrices
	pol, err := simens.NewEnsemblePolicy(name)
	if err != nil {
		return EnsembleRow{}, err
	}
	if err := applyEnsembleOptions(&pol, &cfg, o); err != nil {
		return EnsembleRow{}, fmt.Errorf("%s: %w", name, err)
	}
	cat := cost.DefaultCatalog()
	start := time.Now()
	res, err := simens.RunEnsemble(ctx, cfg, &cat, simens.NewEnsembleWorkload(data, tr, cfg.Seed), pol)
	if err != nil {
		return EnsembleRow{}, fmt.Errorf("%s %s: %w", name, o.Key(), err)
	}
	return EnsembleRow{Policy: name, Result: res, Duration: time.Since(start)}, nil
}

// TunedEnsembleRow is a tuned ensemble baseline's evaluation row and its search.
type TunedEnsembleRow struct {
	EnsembleRow
	Search tune.Result
}

// TuneEnsemble searches b's knobs on tuning and runs the answer on eval.
func TuneEnsemble(ctx context.Context, data *simens.CocktailData, tuning, eval *trace.Trace, b TunedEnsembleBaseline) (TunedEnsembleRow, error) {
	target := simens.DefaultEnsembleConfig().SLO.Target
	run := func(ctx context.Context, o tune.Options, _ tune.Part, _ float64) (tune.Outcome, error) {
		r, err := runEnsembleOptions(ctx, data, tuning, b.Policy, o)
		if err != nil {
			return tune.Outcome{}, err
		}
		s := r.Result.Summary
		return tune.Outcome{Attainment: s.SLOAttainment, Cost: s.CostUSD.Total}, nil
	}
	res, err := tune.Search(ctx, tune.Problem{Policy: b.Name, Knobs: ensembleKnobs, Run: run, Target: target, Descent: true, Trace: tuning.Name})
	if err != nil {
		return TunedEnsembleRow{}, fmt.Errorf("%s: %w", b.Name, err)
	}
	r, err := runEnsembleOptions(ctx, data, eval, b.Policy, res.Options)
	if err != nil {
		return TunedEnsembleRow{}, err
	}
	r.Policy = b.Name
	return TunedEnsembleRow{EnsembleRow: r, Search: res}, nil
}

// FairEnsembleTuned splits tr in halves (SplitTrace): the paper-default and fair rows of
// FairEnsemble and the tuned baselines (tuned on the first half), all run on the second.
func FairEnsembleTuned(ctx context.Context, data *simens.CocktailData, tr *trace.Trace, tuned []TunedEnsembleBaseline) ([]EnsembleRow, []TunedEnsembleRow, error) {
	tuning, eval, _, err := Split(tr.Name, tr, 0)
	if err != nil {
		return nil, nil, err
	}
	rows, err := FairEnsemble(ctx, data, eval)
	if err != nil {
		return nil, nil, err
	}
	var tr2 []TunedEnsembleRow
	for _, b := range tuned {
		r, err := TuneEnsemble(ctx, data, tuning, eval, b)
		if err != nil {
			return nil, nil, err
		}
		rows, tr2 = append(rows, r.EnsembleRow), append(tr2, r)
	}
	return rows, tr2, nil
}

func init() {
	register(Experiment{Name: "ensemble-tuned", Summary: "Cocktail against its baselines tuned on the hour's first half, every row on the second (docs/cocktail.md)",
		Doc: "docs/cocktail.md \"Tuned baselines\"; DATA/ensembles, DATA/prices, DATA/traces/twitter-2017-05-25.rps.csv; --duration; a few minutes", Run: cocktailTunedExperiment})
}

// cocktailTunedExperiment prints FairEnsembleTuned's rows and each tuned row's knobs.
func cocktailTunedExperiment(ctx context.Context, o Options, w io.Writer) error {
	data, tr, err := cocktailInputs(o)
	if err != nil {
		return err
	}
	rows, tuned, err := FairEnsembleTuned(ctx, data, tr, DefaultTunedEnsembleBaselines())
	if err != nil {
		return err
	}
	WriteEnsembleRows(w, rows, false)
	fmt.Fprintln(w)
	for _, t := range tuned {
		fmt.Fprintf(w, "%s: %s (tuning half: attainment %.4f, $%.3f, met %v, %d runs)\n", t.Policy, t.Search.Options.Key(),
			t.Search.Tuning.Attainment, t.Search.Tuning.Cost, t.Search.Met, t.Search.Runs)
	}
	return nil
}
