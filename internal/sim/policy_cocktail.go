package sim

// Placeholder: replace this file with the real policy (docs/sim.md, "Adding a policy").
func init() {
	Register("cocktail", "Cocktail: ensembles with importance-weighted pools, spot procurement", notImplemented("cocktail"))
}
