package experiment

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sloserve/sloserve/internal/cost"
	simens "github.com/sloserve/sloserve/internal/sim/ensemble"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/trace"
)

func init() {
	register(Experiment{Name: "ensemble-explore", Summary: "every ensemble policy on Cocktail's hour, with and without losing 20 % of the pools at 30 min (docs/cocktail.md)",
		Doc: "docs/cocktail.md; DATA/ensembles, DATA/prices, DATA/traces/twitter-2017-05-25.rps.csv; --duration, --policies; a few minutes", Run: ensembleExploreExperiment})
}

// EnsembleRow is one ensemble run: a policy, the fraction of its pools failed at FailAt (0: none)
// and the result.
type EnsembleRow struct {
	Policy   string
	Fail     float64
	Result   *simens.EnsembleResult
	Duration time.Duration
}

// EnsembleExplore runs each ensemble policy (all when names is empty) on data and tr, once without
// failures and once losing fail of every pool half-way through the trace.
func EnsembleExplore(ctx context.Context, data *simens.CocktailData, tr *trace.Trace, names []string, fail float64) ([]EnsembleRow, error) {
	var rows []EnsembleRow
	for _, name := range simens.EnsemblePolicyNames() {
		if !keep(names, name) {
			continue
		}
		for _, f := range []float64{0, fail} {
			r, err := runEnsemble(ctx, data, tr, name, f)
			if err != nil {
				return rows, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// runEnsemble runs one ensemble policy on data and tr, losing fail of every pool half-way (0: none).
func runEnsemble(ctx context.Context, data *simens.CocktailData, tr *trace.Trace, name string, fail float64) (EnsembleRow, error) {
	cfg := simens.DefaultEnsembleConfig()
	if fail > 0 {
		cfg.FailAt, cfg.FailFraction = tr.Duration()/2, fail
	}
	pol, err := simens.NewEnsemblePolicy(name)
	if err != nil {
		return EnsembleRow{}, err
	}
	cfg.SpotPrices = data.SpotPrices
	cat := cost.DefaultCatalog()
	start := time.Now()
	res, err := simens.RunEnsemble(ctx, cfg, &cat, simens.NewEnsembleWorkload(data, tr, cfg.Seed), pol)
	if err != nil {
		return EnsembleRow{}, fmt.Errorf("%s: %w", name, err)
	}
	return EnsembleRow{Policy: name, Fail: fail, Result: res, Duration: time.Since(start)}, nil
}

// FairEnsemble runs Cocktail beside the paper's baselines and the fair ones (issue #17) without
// failures: cocktail, clipper, clipper-fair, clipper-x, infaas and infaas-spot, in that order.
func FairEnsemble(ctx context.Context, data *simens.CocktailData, tr *trace.Trace) ([]EnsembleRow, error) {
	var rows []EnsembleRow
	for _, name := range []string{"cocktail", "clipper", "clipper-fair", "clipper-x", "infaas", "infaas-spot"} {
		r, err := runEnsemble(ctx, data, tr, name, 0)
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// ensembleExploreExperiment prints one row per policy and failure, with its selections and pools.
func ensembleExploreExperiment(ctx context.Context, o Options, w io.Writer) error {
	data, tr, err := cocktailInputs(o)
	if err != nil {
		return err
	}
	rows, err := EnsembleExplore(ctx, data, tr, o.Policies, 0.2)
	if err != nil {
		return err
	}
	WriteEnsembleRows(w, rows, true)
	return nil
}

// WriteEnsembleRows prints the rows as a Markdown table, and each run's selections and pools
// below it when detail is set.
func WriteEnsembleRows(w io.Writer, rows []EnsembleRow, detail bool) {
	fmt.Fprintln(w, "| policy | failed at half | cost $ | accuracy | target met | SLO | requests | completed | failed | models | votes | p99 ms | wall s |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		s := r.Result.Summary
		fmt.Fprintf(w, "| %s | %.1f | %.3f | %.4f | %.3f | %.4f | %d | %d | %d | %.2f | %.2f | %.0f | %.1f |\n", r.Policy, r.Fail, s.CostUSD.Total, accuracy(s),
			s.Extra["accuracy_target_met_fraction"], s.SLOAttainment, s.Requests, s.Completed, s.Failed, s.Extra["mean_models"], s.Extra["mean_votes"],
			s.LatencyMS.P99, r.Duration.Seconds())
	}
	if !detail {
		return
	}
	for _, r := range rows {
		fmt.Fprintf(w, "\n%s, failed %.1f:\n", r.Policy, r.Fail)
		for _, c := range r.Result.Selections {
			fmt.Fprintf(w, "   %+v\n", c)
		}
		for _, p := range r.Result.Pools {
			fmt.Fprintf(w, "   %+v\n", p)
		}
	}
}

func accuracy(s slo.Summary) float64 {
	if s.Accuracy == nil {
		return 0
	}
	return *s.Accuracy
}

// cocktailInputs loads Cocktail's models and accuracies and the Twitter trace its experiments
// replay, cut to o.Duration as the Cocktail setting cuts it.
func cocktailInputs(o Options) (*simens.CocktailData, *trace.Trace, error) {
	data, err := simens.LoadCocktailData(o.Data)
	if err != nil {
		return data, nil, err
	}
	tr, err := trace.Open(o.data(simens.CocktailTwitterTrace))
	if err != nil {
		return data, nil, err
	}
	to, err := simens.CocktailTraceOptions(tr, o.Duration, 0)
	if err == nil {
		tr, err = tr.With(to)
	}
	return data, tr, err
}
