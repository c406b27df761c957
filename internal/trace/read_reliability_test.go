package trace

import (
	"bytes"
	"testing"
	"time"
)

// FuzzReadSeriesAs: a rate or count series of any content is read or refused with an error,
// never a panic.
func FuzzReadSeriesAs(f *testing.F) {
	f.Add([]byte("1\n2\n3\n"), true)
	f.Add([]byte("time,rps\n0,1.5\n60,2\n"), false)
	f.Add([]byte("NaN\n-1\n1e400\n"), true)
	f.Fuzz(func(t *testing.T, b []byte, isRate bool) {
		tr, err := ReadSeriesAs(bytes.NewReader(b), "fuzz", time.Second, isRate)
		if err == nil && tr == nil {
			t.Fatal("nil trace without an error")
		}
	})
}

// FuzzReadMatrix2: a 2×2 matrix file of any content is read or refused, never a panic.
func FuzzReadMatrix2(f *testing.F) {
	f.Add([]byte("-1 1\n0 -2\n"))
	f.Add([]byte("1,2\n3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadMatrix2(bytes.NewReader(b))
	})
}
