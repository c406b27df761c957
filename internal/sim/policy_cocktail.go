package sim

import "fmt"

// The registry's "cocktail" entry stays a pointer: Cocktail serves each request with an
// ensemble of models, each model with its own VM pool and queue, and answers with a vote —
// which the single-model, shared-queue engine (Run) does not model. It runs on the ensemble
// simulator instead (RunEnsemble with CocktailPolicy, ClipperPolicy or InFaaSPolicy;
// `sloserve ensemble simulate`; docs/cocktail.md). Returning ErrNotImplemented keeps
// `sloserve sim --policy all` and the conformance test skipping it.
func init() {
	Register("cocktail", "Cocktail: ensembles with importance-weighted pools, spot procurement (ensemble simulator: sim/ensemble.RunEnsemble)",
		func(Env) (Policy, error) {
			return Policy{}, fmt.Errorf("cocktail runs on the ensemble simulator (sim/ensemble.RunEnsemble): use `sloserve sim --setting cocktail` or `sloserve ensemble simulate`: %w", ErrNotImplemented)
		})
}
