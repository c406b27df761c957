package sim

// Placeholder: replace this file with the real policy (docs/sim.md, "Adding a policy").
func init() {
	Register("infless", "INFless: non-uniform per-instance batching, r_up-weighted dispatch, LSTH keep-alive", notImplemented("infless"))
}
