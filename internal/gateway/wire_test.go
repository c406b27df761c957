package gateway

import (
	"testing"
)

func TestFlattenData(t *testing.T) {
	tests := []struct {
		name, in, want string
		n              int
		wantErr        bool
	}{
		{name: "flat", in: `[1, 2.5,-3e2]`, want: `1,2.5,-3e2`, n: 3},
		{name: "nested", in: `[[1,2],[3,4]]`, want: `1,2,3,4`, n: 4},
		{name: "bools", in: `[true,false]`, want: `true,false`, n: 2},
		{name: "empty", in: `[]`, want: ``, n: 0},
		{name: "not array", in: `1`, wantErr: true},
		{name: "string", in: `["a"]`, wantErr: true},
		{name: "trailing comma", in: `[1,]`, wantErr: true},
		{name: "missing comma", in: `[1 2]`, wantErr: true},
		{name: "unterminated", in: `[1,2`, wantErr: true},
		{name: "trailing bytes", in: `[1] x`, wantErr: true},
		{name: "bad exponent", in: `[1e]`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := flattenData(nil, []byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if string(got) != tc.want || n != tc.n {
				t.Errorf("(-want +got): -%q/%d +%q/%d", tc.want, tc.n, got, n)
			}
		})
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add(body("a", 2, ""))
	f.Add([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[[1],[2]]}],"parameters":{"timeout":"5"}}`))
	f.Add([]byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[0],"data":[]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b, nil)
		if err != nil {
			return
		}
		// A valid request always encodes into a batch that splits back.
		enc := encodeBatch([]*Request{r, r})
		if _, err := ParseRequest(enc, nil); err != nil {
			t.Fatalf("batch of a valid request does not parse: %v\n%s", err, enc)
		}
	})
}

func FuzzSplitResponse(f *testing.F) {
	f.Add([]byte(`{"model_name":"m","outputs":[{"name":"y","datatype":"FP32","shape":[3,1],"data":[1,2,3]}]}`))
	f.Add([]byte(`{"model_name":"m","outputs":[{"name":"y","datatype":"FP32","shape":[3,0],"data":[]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		reqs := []*Request{{ID: "a", Rows: 1}, {ID: "b", Rows: 2}}
		out, err := splitResponse(b, reqs)
		if err == nil && len(out) != 2 {
			t.Fatalf("split into %d answers, want 2", len(out))
		}
	})
}
