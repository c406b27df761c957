package analytic

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// sharedData is /work/shared/data as seen from this package directory.
const sharedData = "../../../shared/data"

// needShared returns the path of a file under the shared data folder, or skips the test.
func needShared(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedData, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data %s not available (%v): run from a checkout next to ../shared/data", rel, err)
	}
	return p
}

// publishedTwitterMAP reads BATCH's MAP fit of hour file index w (1..24).
func publishedTwitterMAP(t testing.TB, w int) *MAP {
	t.Helper()
	p0 := needShared(t, fmt.Sprintf("traces/batch-map-fits/twitter/MAP%d_D0", w))
	p1 := needShared(t, fmt.Sprintf("traces/batch-map-fits/twitter/MAP%d_D1", w))
	d0, err := os.Open(p0)
	if err != nil {
		t.Fatal(err)
	}
	defer d0.Close()
	d1, err := os.Open(p1)
	if err != nil {
		t.Fatal(err)
	}
	defer d1.Close()
	a, err := ReadMAP(d0, d1)
	if err != nil {
		t.Fatalf("ReadMAP(MAP%d): %v", w, err)
	}
	return a
}

// mustMAP fails the test on a constructor error: mustMAP(t)(Poisson(1)).
func mustMAP(t testing.TB) func(*MAP, error) *MAP {
	return func(a *MAP, err error) *MAP {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

// sample draws n inter-arrival times from a with a fixed seed.
func sample(a *MAP, n int, seed uint64) []float64 {
	s := NewSampler(a, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	out := make([]float64, n)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

// linearService is BATCH's "manual" linear profile S_k = 0.034·k + 0.01 s (solver.py).
func linearService(b int) []float64 {
	s := make([]float64, b)
	for k := range s {
		s[k] = 0.034*float64(k+1) + 0.01
	}
	return s
}

// polyService returns S_1..S_b of a polynomial at memoryMB.
func polyService(p Polynomial, b, memoryMB int) []float64 {
	s := make([]float64, b)
	for k := range s {
		s[k] = p.ServiceTime(k+1, memoryMB)
	}
	return s
}

// newRand returns a seeded generator.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed*31+7)) }
