package analytic

import (
	"strings"
	"testing"
)

// FuzzReadMAP: a MAP's D0 and D1 files of any content give a MAP or an error, never a panic.
func FuzzReadMAP(f *testing.F) {
	f.Add("-14.625001,0.000000\n0.000000,-35.171226\n", "14.0,0.625001\n1.0,34.171226\n")
	f.Add("-1\n", "1\n")
	f.Add("1 2\n3 4\n", "x")
	f.Fuzz(func(t *testing.T, d0, d1 string) {
		m, err := ReadMAP(strings.NewReader(d0), strings.NewReader(d1))
		if err == nil && m == nil {
			t.Fatal("nil MAP without an error")
		}
	})
}
