// Package chaos injects faults into a running fleet of local worker processes — kill -9, a hang
// (SIGSTOP for a while) or slowness (a SIGSTOP/SIGCONT duty cycle) — to test that every request
// still gets exactly one answer.
package chaos
