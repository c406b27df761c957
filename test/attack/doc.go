// Package attack holds the adversarial suite of issue 21 — connection floods and memory
// attacks against a real `sloserve serve` with real workers on loopback — run only with
// SLOSERVE_ATTACK=1 and SLOSERVE_BIN (`make attack`), each scenario bounded in time.
package attack
