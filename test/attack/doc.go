// Package attack holds the adversarial suite of issue 21: bounded, loopback-only replays of what a
// hostile or careless client can do to the others' requests — connection floods, memory attacks,
// lock-out, poisoned batches, large requests and overload — against a real `sloserve serve` or
// gateway stack with real workers, run only with SLOSERVE_ATTACK=1 and SLOSERVE_BIN (`make attack`).
package attack
