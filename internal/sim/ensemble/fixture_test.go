package ensemble

import (
	"os"
	"testing"
)

// fixtureData is the committed stand-in for the shared data (testdata/fixture/README.md): the same
// layout, the first hour of the Twitter trace, and made-up profiles, traces and class tables.
const fixtureData = "../../../testdata/fixture"

// dataDir returns the shared data directory, or the committed fixture when it is absent, so that
// the acceptance tests run on a fresh clone (on made-up numbers, which the test logs).
func dataDir(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(sharedData); err == nil {
		return sharedData
	}
	t.Logf("%s is absent: running on %s (made-up data)", sharedData, fixtureData)
	return fixtureData
}
