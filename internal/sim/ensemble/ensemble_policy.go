package ensemble

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/ensemble"
	"github.com/sloserve/sloserve/internal/policy"
	"github.com/sloserve/sloserve/internal/policy/cocktail"
)

// The ensemble simulator (RunEnsemble) drives cocktail.Policy, the ensemble port of the one
// policy registry (policy/cocktail: cocktail, clipper, infaas and their ablations;
// policy/sloserve: sloserve). These names keep the engine's call sites short.
type (
	// EnsemblePolicy is cocktail.Policy.
	EnsemblePolicy = cocktail.Policy
	// SelectionMode is cocktail.SelectionMode.
	SelectionMode = cocktail.SelectionMode
	// ScalingMode is cocktail.ScalingMode.
	ScalingMode = cocktail.ScalingMode
)

// The selection and scaling modes.
const (
	SelectDynamic   = cocktail.SelectDynamic
	SelectFull      = cocktail.SelectFull
	SelectSingle    = cocktail.SelectSingle
	SelectAll       = cocktail.SelectAll
	ScaleWeighted   = cocktail.ScaleWeighted
	ScaleStaticPeak = cocktail.ScaleStaticPeak
)

// Ensemble policy defaults (cocktail's).
const (
	DefaultStaffing        = cocktail.DefaultStaffing
	DefaultForecastMethod  = cocktail.DefaultForecastMethod
	DefaultForecastHorizon = cocktail.DefaultForecastHorizon
	DefaultReactiveStep    = cocktail.DefaultReactiveStep
)

// CocktailPolicy is cocktail.Cocktail.
func CocktailPolicy() EnsemblePolicy { return cocktail.Cocktail() }

// ClipperPolicy is cocktail.Clipper.
func ClipperPolicy() EnsemblePolicy { return cocktail.Clipper() }

// InFaaSPolicy is cocktail.InFaaS.
func InFaaSPolicy() EnsemblePolicy { return cocktail.InFaaS() }

// EnsemblePolicyNames returns the registered ensemble policies' names, sorted.
func EnsemblePolicyNames() []string { return policy.Names(policy.PortEnsemble) }

// NewEnsemblePolicy returns the named ensemble policy with its defaults, from the registry.
func NewEnsemblePolicy(name string) (EnsemblePolicy, error) {
	p, err := policy.Build(policy.PortEnsemble, name, nil)
	if err != nil {
		return EnsemblePolicy{}, fmt.Errorf("ensemble %w", err)
	}
	e, ok := p.(EnsemblePolicy)
	if !ok {
		return EnsemblePolicy{}, fmt.Errorf("ensemble policy %q: New returned %T, not a cocktail.Policy", name, p)
	}
	return e, nil
}

func singleModel(cand []ensemble.Model, target, margin float64) ensemble.Model {
	return cocktail.SingleModel(cand, target, margin)
}
