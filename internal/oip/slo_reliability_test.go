package oip

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseSLO: any request parameters give a valid RequestSLO (no negative bound) or an error
// wrapping ErrBadRequest, never a panic.
func FuzzParseSLO(f *testing.F) {
	f.Add([]byte(`{"timeout": 150000}`))
	f.Add([]byte(`{"latency_ms": "12.5", "timeout": 1}`))
	f.Add([]byte(`{"timeout": -1, "latency_ms": 1e400}`))
	f.Add([]byte(`{"timeout": [1], "latency_ms": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Parameters
		if json.Unmarshal(b, &p) != nil {
			return
		}
		s, err := ParseSLO(p)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("ParseSLO error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		if s.Timeout < 0 || s.Latency < 0 || s.Bound() < 0 {
			t.Fatalf("negative bound %+v", s)
		}
	})
}
