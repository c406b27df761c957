package sim

// Placeholder: replace this file with the real policy (docs/sim.md, "Adding a policy").
func init() { Register("sloserve", "sloserve's combined policy", notImplemented("sloserve")) }
