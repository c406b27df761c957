package analytic

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzReadMatrix(f *testing.F) {
	f.Add("-14.625001,0.000000\n0.000000,-35.171226\n")
	f.Add("1 2\n3 4\n")
	f.Add("# comment\n\n5\n")
	f.Add("1,2\n3\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ReadMatrix(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, row := range m {
			if len(row) != len(m) {
				t.Fatalf("ReadMatrix returned a %d-row matrix with a row of %d", len(m), len(row))
			}
		}
		// A MAP from arbitrary matrices must be rejected or valid, never panic.
		_, _ = NewMAP(m, m)
	})
}

func FuzzReadInterarrivals(f *testing.F) {
	f.Add("0.00161438\n0.0132707\n0.0431486\n")
	f.Add("-1\n")
	f.Add("NaN\n1e400\n")
	f.Fuzz(func(t *testing.T, s string) {
		x, err := ReadInterarrivals(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, v := range x {
			if v < 0 {
				t.Fatalf("negative inter-arrival %g accepted", v)
			}
		}
		if a, _, err := FitMAP2(x); err == nil && !(a.Rate() > 0) {
			t.Fatalf("fit of %v has rate %g", x, a.Rate())
		}
	})
}

func FuzzReadPolynomial(f *testing.F) {
	f.Add([]byte(`{"name":"x","degree":1,"coefficients":[0.1,0.2,0],"batch_min":1,"batch_max":4,"memory_min_mb":128,"memory_max_mb":256}`), "x")
	f.Add([]byte(`{"batch_service_time_polynomial":{"coefficients":{"m":{"t0":1,"t1":2,"t2":3}}}}`), "m")
	f.Add([]byte(`{`), "")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		p, err := ReadPolynomial(bytes.NewReader(data), name)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ReadPolynomial returned an invalid polynomial: %v", err)
		}
		_ = p.ServiceTime(p.BatchMin, p.MemoryMinMB)
	})
}
