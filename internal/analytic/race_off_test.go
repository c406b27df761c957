//go:build !race

package analytic

// raceEnabled lets the heavy statistical tests use fewer samples under the race detector.
const raceEnabled = false
