//go:build race

package main

// raceEnabled reports a test binary built with the race detector, whose worker processes (the
// test binary itself) and gateway run several times slower than the profiles they plan with.
const raceEnabled = true
