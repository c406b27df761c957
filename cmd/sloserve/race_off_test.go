//go:build !race

package main

// raceEnabled reports a test binary built with the race detector (see race_on_test.go).
const raceEnabled = false
