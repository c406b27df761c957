package sim

// Placeholder: replace this file with the real policy (docs/sim.md, "Adding a policy").
func init() {
	Register("mark", "MArk: predictive planner over the catalog, Bouncer spill to serverless, SLO monitor, spot (issue: mark)", notImplemented("mark"))
}
