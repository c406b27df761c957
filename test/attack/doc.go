// Package attack holds the adversarial suite: bounded, loopback-only replays of what a hostile or
// careless client can do to the others' requests, run only with SLOSERVE_ATTACK=1 (`make attack`).
package attack
