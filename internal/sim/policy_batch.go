package sim

// Placeholder: replace this file with the real policy (docs/sim.md, "Adding a policy").
func init() {
	Register("batch", "BATCH: analytic optimiser of memory, batch size and timeout for the serverless tier", notImplemented("batch"))
}
