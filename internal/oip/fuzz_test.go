package oip

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func addSeeds(f *testing.F) {
	f.Helper()
	files, _ := filepath.Glob("testdata/request_*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"inputs":[{"data":[[1],[2]],"name":"x","shape":[2,1],"datatype":"INT32"}]}`,
		`{"id":"\ud83d\ude00","inputs":[{"name":"b","datatype":"BOOL","shape":[1],"data":[true]}]}`,
		`{"model_name":"m","outputs":[{"name":"y","datatype":"FP64","shape":[1],"data":[1e-300]}],"x":[null]}`,
		`{"inputs":[{"name":"x","datatype":"FP32","shape":[0],"data":[]}],"outputs":[{"name":"y"}]}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzDecodeRequest checks that the strict decoder never panics and that whatever it accepts
// re-encodes to a body it accepts again with the same encoding (encode∘decode is idempotent).
func FuzzDecodeRequest(f *testing.F) {
	addSeeds(f)
	lim := DefaultLimits()
	lim.MaxTotalElements = 1 << 16
	lim.MaxTensorElements = 1 << 16
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRequest(body, lim)
		if err != nil {
			return
		}
		b1, err := AppendRequest(nil, r)
		if err != nil {
			t.Fatalf("AppendRequest of a decoded request: %v", err)
		}
		r2, err := DecodeRequest(b1, lim)
		if err != nil {
			t.Fatalf("DecodeRequest(%s) of our own encoding: %v", b1, err)
		}
		b2, err := AppendRequest(nil, r2)
		if err != nil {
			t.Fatalf("AppendRequest second time: %v", err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable (-first +second):\n- %s\n+ %s", b1, b2)
		}
	})
}

// FuzzDecodeResponse is FuzzDecodeRequest for the lenient response decoder.
func FuzzDecodeResponse(f *testing.F) {
	addSeeds(f)
	lim := DefaultLimits()
	lim.MaxTotalElements = 1 << 16
	lim.MaxTensorElements = 1 << 16
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeResponse(body, lim)
		if err != nil {
			return
		}
		b1, err := AppendResponse(nil, r)
		if err != nil {
			t.Fatalf("AppendResponse of a decoded response: %v", err)
		}
		r2, err := DecodeResponse(b1, lim)
		if err != nil {
			t.Fatalf("DecodeResponse(%s) of our own encoding: %v", b1, err)
		}
		b2, _ := AppendResponse(nil, r2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable (-first +second):\n- %s\n+ %s", b1, b2)
		}
	})
}

// FuzzParseFloat32 checks the FP32 fast path against strconv on every valid JSON number.
func FuzzParseFloat32(f *testing.F) {
	for _, s := range []string{"0", "-0.5", "1e10", "0.5803921568627451", "9999999", "1234567.0", "0.0000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := decoder{b: []byte(s)}
		n, _, err := d.number()
		if err != nil || len(n) != len(s) {
			return
		}
		got, ok := parseFloat32(n)
		want, werr := strconv.ParseFloat(s, 32)
		if ok != (werr == nil) || (ok && got != float32(want)) {
			t.Fatalf("parseFloat32(%q) = %v, %v; strconv = %v, %v", s, got, ok, float32(want), werr)
		}
	})
}

// FuzzParseFloat64 checks the FP64 fast path against strconv on every valid JSON number.
func FuzzParseFloat64(f *testing.F) {
	for _, s := range []string{"0", "-0.5", "1e10", "0.5803921568627451", "123456789012345", "0.0000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := decoder{b: []byte(s)}
		n, _, err := d.number()
		if err != nil || len(n) != len(s) {
			return
		}
		got, ok := parseFloat64(n)
		want, werr := strconv.ParseFloat(s, 64)
		if ok != (werr == nil) || (ok && got != want) {
			t.Fatalf("parseFloat64(%q) = %v, %v; strconv = %v, %v", s, got, ok, want, werr)
		}
	})
}

// FuzzScanDecimal checks the one-pass data fast path against number + strconv.
func FuzzScanDecimal(f *testing.F) {
	for _, s := range []string{"0", "-0.5", "01", "0.5803921568627451", "123456789012345", "0.0000001", "1.", "-", "1e5", "0.10000000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := decoder{b: []byte(s)}
		got, exact, ok := d.scanDecimal()
		if !ok {
			if d.i != 0 {
				t.Fatalf("scanDecimal(%q) failed but consumed %d bytes", s, d.i)
			}
			return
		}
		end := d.i
		d2 := decoder{b: []byte(s)}
		n, _, err := d2.number()
		if err != nil || d2.i != end {
			t.Fatalf("scanDecimal(%q) accepted %q; number() = %q, %v", s, s[:end], n, err)
		}
		want, werr := strconv.ParseFloat(string(n), 64)
		if exact && (werr != nil || got != want) {
			t.Fatalf("scanDecimal(%q) = %v; strconv = %v, %v", s, got, want, werr)
		}
		if safeForFloat32(got, exact) {
			want32, _ := strconv.ParseFloat(string(n), 32)
			if float32(got) != float32(want32) {
				t.Fatalf("scanDecimal(%q) as float32 = %v; strconv = %v", s, float32(got), float32(want32))
			}
		}
	})
}

// FuzzDecodeRequestBinary checks the binary-extension decoder like FuzzDecodeRequest; the JSON
// length is taken modulo the body length.
func FuzzDecodeRequestBinary(f *testing.F) {
	for _, tc := range []struct {
		json string
		blob []byte
	}{
		{`{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}`, []byte{0, 0, 128, 63}},
		{`{"inputs":[{"name":"s","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":5}},{"name":"b","datatype":"BOOL","shape":[1],"data":[true]}]}`, []byte{1, 0, 0, 0, 'a'}},
	} {
		f.Add(append([]byte(tc.json), tc.blob...), uint16(len(tc.json)))
	}
	lim := DefaultLimits()
	lim.MaxTotalElements = 1 << 16
	lim.MaxTensorElements = 1 << 16
	f.Fuzz(func(t *testing.T, body []byte, hl uint16) {
		r, err := DecodeRequestBinary(body, int(hl)%(len(body)+1), lim)
		if err != nil {
			return
		}
		b1, h1, err := AppendRequestBinary(nil, r)
		if err != nil {
			t.Fatalf("AppendRequestBinary of a decoded request: %v", err)
		}
		r2, err := DecodeRequestBinary(b1, h1, lim)
		if err != nil {
			t.Fatalf("DecodeRequestBinary of our own encoding: %v", err)
		}
		b2, _, _ := AppendRequestBinary(nil, r2)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable (-first +second):\n- %q\n+ %q", b1, b2)
		}
	})
}
