// Package soak holds bounded long-running reliability tests — overload at 10× capacity and a
// soak under random faults — run only with SLOSERVE_SOAK=1 (`make soak`).
package soak
