package oip

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestDecodeRequestValid(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *InferenceRequest
	}{
		{
			name: "flat fp32 with id and parameters",
			body: `{"id":"r1","parameters":{"timeout":5000,"tag":"a","hot":true},"inputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[1,2.5,-3e-1,0]}]}`,
			want: &InferenceRequest{ID: "r1", Parameters: Parameters{"timeout": json.Number("5000"), "tag": "a", "hot": true},
				Inputs: []Tensor{{Name: "x", Datatype: DatatypeFP32, Shape: []int64{2, 2}, FP32: []float32{1, 2.5, -0.3, 0}}}},
		},
		{
			name: "nested data",
			body: `{"inputs":[{"name":"x","datatype":"INT64","shape":[2,2],"data":[[1,2],[3,-4]]}]}`,
			want: &InferenceRequest{Inputs: []Tensor{{Name: "x", Datatype: DatatypeINT64, Shape: []int64{2, 2}, INT64: []int64{1, 2, 3, -4}}}},
		},
		{
			name: "data before datatype and shape",
			body: `{"inputs":[{"data":[true,false,true],"name":"b","shape":[3],"datatype":"BOOL"}]}`,
			want: &InferenceRequest{Inputs: []Tensor{{Name: "b", Datatype: DatatypeBOOL, Shape: []int64{3}, BOOL: []bool{true, false, true}}}},
		},
		{
			name: "bytes, fp64, int32 and requested outputs",
			body: ` { "inputs" : [ {"name":"s","datatype":"BYTES","shape":[2],"data":["h\u00e9","a\"b\\n"]},
				{"name":"d","datatype":"FP64","shape":[1],"data":[1e300]},
				{"name":"i","datatype":"INT32","shape":[1,1],"data":[[-2147483648]]} ],
				"outputs":[{"name":"y","parameters":{"binary_data":false}}] } `,
			want: &InferenceRequest{
				Inputs: []Tensor{
					{Name: "s", Datatype: DatatypeBYTES, Shape: []int64{2}, BYTES: []string{"hé", "a\"b\\n"}},
					{Name: "d", Datatype: DatatypeFP64, Shape: []int64{1}, FP64: []float64{1e300}},
					{Name: "i", Datatype: DatatypeINT32, Shape: []int64{1, 1}, INT32: []int32{math.MinInt32}},
				},
				Outputs: []RequestedOutput{{Name: "y", Parameters: Parameters{"binary_data": false}}},
			},
		},
		{
			name: "scalar shape",
			body: `{"inputs":[{"name":"x","datatype":"FP32","shape":[],"data":[7]}]}`,
			want: &InferenceRequest{Inputs: []Tensor{{Name: "x", Datatype: DatatypeFP32, Shape: []int64{}, FP32: []float32{7}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeRequest([]byte(tc.body), DefaultLimits())
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			assertEqual(t, tc.want, got)
		})
	}
}

func TestDecodeRequestTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/request_*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := DecodeRequest(b, DefaultLimits())
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			roundTrip(t, r)
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	small := DefaultLimits()
	small.MaxTensorElements = 4
	small.MaxTotalElements = 6
	small.MaxTensors = 2
	tests := []struct {
		name    string
		body    string
		lim     Limits
		wantErr error
		wantMsg string
	}{
		{"empty", ``, Limits{}, ErrBadRequest, "unexpected end"},
		{"not an object", `[1]`, Limits{}, ErrBadRequest, "expected a JSON object"},
		{"malformed", `{"inputs":[{"name":"x",}]}`, Limits{}, ErrBadRequest, "invalid JSON"},
		{"trailing garbage", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]}]} x`, Limits{}, ErrBadRequest, "end of input"},
		{"unknown top field", `{"input":[]}`, Limits{}, ErrBadRequest, `unknown field "input"`},
		{"unknown tensor field", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],"dims":[1]}]}`, Limits{}, ErrBadRequest, `unknown field "dims"`},
		{"missing inputs", `{"id":"a"}`, Limits{}, ErrBadRequest, "missing inputs"},
		{"missing name", `{"inputs":[{"datatype":"FP32","shape":[1],"data":[1]}]}`, Limits{}, ErrBadRequest, "missing name"},
		{"missing datatype", `{"inputs":[{"name":"x","shape":[1],"data":[1]}]}`, Limits{}, ErrBadRequest, "missing datatype"},
		{"missing shape", `{"inputs":[{"name":"x","datatype":"FP32","data":[1]}]}`, Limits{}, ErrBadRequest, "missing shape"},
		{"missing data", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1]}]}`, Limits{}, ErrBadRequest, "missing data"},
		{"unsupported datatype", `{"inputs":[{"name":"x","datatype":"FP16","shape":[1],"data":[1]}]}`, Limits{}, ErrBadRequest, `unsupported datatype "FP16"`},
		{"wrong element type", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":["1"]}]}`, Limits{}, ErrBadRequest, "FP32 data must be numbers"},
		{"fraction in int", `{"inputs":[{"name":"x","datatype":"INT64","shape":[1],"data":[1.5]}]}`, Limits{}, ErrBadRequest, "is not an INT64"},
		{"int32 overflow", `{"inputs":[{"name":"x","datatype":"INT32","shape":[1],"data":[2147483648]}]}`, Limits{}, ErrBadRequest, "is not an INT32"},
		{"fp32 overflow", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1e39]}]}`, Limits{}, ErrBadRequest, "out of FP32 range"},
		{"count mismatch", `{"inputs":[{"name":"x","datatype":"FP32","shape":[2,2],"data":[1,2,3]}]}`, Limits{}, ErrBadRequest, "data has 3 elements, shape [2 2] needs 4"},
		{"negative dim", `{"inputs":[{"name":"x","datatype":"FP32","shape":[-1],"data":[]}]}`, Limits{}, ErrBadRequest, "dimensions must be integers >= 0"},
		{"fractional dim", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1.0],"data":[1]}]}`, Limits{}, ErrBadRequest, "dimensions must be integers"},
		{"data not array", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":1}]}`, Limits{}, ErrBadRequest, "data must be an array"},
		{"duplicate field", `{"inputs":[{"name":"x","name":"y","datatype":"FP32","shape":[1],"data":[1]}]}`, Limits{}, ErrBadRequest, `duplicate field "name"`},
		{"duplicate input", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]},{"name":"x","datatype":"FP32","shape":[1],"data":[1]}]}`, Limits{}, ErrBadRequest, `duplicate input "x"`},
		{"nested parameter", `{"parameters":{"a":{"b":1}},"inputs":[]}`, Limits{}, ErrBadRequest, "must be a string, number or boolean"},
		{"bad escape", `{"id":"\x","inputs":[]}`, Limits{}, ErrBadRequest, "valid escape"},
		{"control char", "{\"id\":\"a\nb\"}", Limits{}, ErrBadRequest, "control character"},
		{"leading zero", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[01]}]}`, Limits{}, ErrBadRequest, "invalid JSON"},
		{"tensor too large", `{"inputs":[{"name":"x","datatype":"FP32","shape":[5],"data":[1,2,3,4,5]}]}`, small, ErrTooLarge, "more than 4 elements"},
		{"total too large", `{"inputs":[{"name":"x","datatype":"FP32","shape":[4],"data":[1,2,3,4]},{"name":"y","datatype":"FP32","shape":[4],"data":[1,2,3,4]}]}`, small, ErrTooLarge, "more than 6 elements in all tensors"},
		{"too many tensors", `{"inputs":[{"name":"a","datatype":"FP32","shape":[1],"data":[1]},{"name":"b","datatype":"FP32","shape":[1],"data":[1]},{"name":"c","datatype":"FP32","shape":[1],"data":[1]}]}`, small, ErrTooLarge, "more than 2 inputs"},
		{"too deep", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":` + strings.Repeat("[", 40) + `1` + strings.Repeat("]", 40) + `}]}`, Limits{}, ErrBadRequest, "nesting deeper"},
		{"body too large", `{"inputs":[]}`, Limits{MaxBodyBytes: 5, MaxTensorElements: 1, MaxTotalElements: 1, MaxTensors: 1, MaxDepth: 8}, ErrTooLarge, "limit 5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tc.body), tc.lim)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("DecodeRequest error = %v, want one wrapping %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("DecodeRequest error = %q, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestDecodeResponseSkipsUnknownFields(t *testing.T) {
	body := `{"model_name":"m","model_version":"1","id":"q","extra":{"a":[1,{"b":null}]},
		"outputs":[{"name":"y","datatype":"FP32","shape":[1,2],"data":[0.25,1],"x-vendor":"v"}]}`
	got, err := DecodeResponse([]byte(body), DefaultLimits())
	if err != nil {
		t.Fatalf("DecodeResponse: %v", err)
	}
	want := &InferenceResponse{ModelName: "m", ModelVersion: "1", ID: "q",
		Outputs: []Tensor{{Name: "y", Datatype: DatatypeFP32, Shape: []int64{1, 2}, FP32: []float32{0.25, 1}}}}
	assertEqual(t, want, got)
}

func TestEncodeRoundTrip(t *testing.T) {
	r := &InferenceRequest{
		ID:         "id\t\"1\"\x01\xff",
		Parameters: Parameters{"timeout": 1000, "f": 0.5, "s": "x", "b": false, "n": json.Number("12345678901234567890")},
		Inputs: []Tensor{
			NewFP32("x", []int64{1, 3}, []float32{math.SmallestNonzeroFloat32, math.MaxFloat32, -0.1}),
			{Name: "s", Datatype: DatatypeBYTES, Shape: []int64{1}, BYTES: []string{"😀"}},
		},
		Outputs: []RequestedOutput{{Name: "y"}},
	}
	b, err := AppendRequest(nil, r)
	if err != nil {
		t.Fatalf("AppendRequest: %v", err)
	}
	if !json.Valid(b) {
		t.Fatalf("AppendRequest wrote invalid JSON: %s", b)
	}
	got, err := DecodeRequest(b, DefaultLimits())
	if err != nil {
		t.Fatalf("DecodeRequest(%s): %v", b, err)
	}
	if got.ID != "id\t\"1\"\x01\ufffd" {
		t.Errorf("id (-want +got):\n- %q\n+ %q", "id\t\"1\"\x01\ufffd", got.ID)
	}
	assertEqual(t, r.Inputs, got.Inputs)
}

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name string
		resp *InferenceResponse
		want string
	}{
		{"nan", &InferenceResponse{Outputs: []Tensor{NewFP32("y", []int64{1}, []float32{float32(math.NaN())})}}, "JSON cannot carry"},
		{"count", &InferenceResponse{Outputs: []Tensor{NewFP32("y", []int64{2}, []float32{1})}}, "shape [2] needs 2"},
		{"datatype", &InferenceResponse{Outputs: []Tensor{{Name: "y", Datatype: "UINT8", Shape: []int64{0}}}}, "unsupported datatype"},
		{"parameter", &InferenceResponse{Parameters: Parameters{"a": []int{1}}}, "unsupported type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AppendResponse(nil, tc.resp)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("AppendResponse error = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParseFloat32MatchesStrconv checks the fast path against strconv on the decimal forms that
// encoders write: shortest float32 ('g', -1, 32), fixed short decimals, and float64 forms.
func TestParseFloat32MatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(s string) {
		t.Helper()
		got, ok := parseFloat32([]byte(s))
		want, err := strconv.ParseFloat(s, 32)
		if !ok || err != nil || got != float32(want) {
			t.Fatalf("parseFloat32(%q) = %v, %v; strconv = %v, %v", s, got, ok, float32(want), err)
		}
	}
	for range 20000 {
		f := rng.Float32()*2 - 1
		check(strconv.FormatFloat(float64(f), 'g', -1, 32))
		check(strconv.FormatFloat(float64(f), 'f', rng.IntN(11), 64))
		check(strconv.FormatFloat(float64(f)*1e4, 'f', rng.IntN(4), 64))
		check(strconv.FormatFloat(float64(f), 'g', -1, 64))
		check(strconv.Itoa(rng.IntN(1 << 30)))
	}
	for _, s := range []string{"0", "-0", "0.0000000001", "9999999", "99999999", "1e-45", "3.4028235e38", "0.1", "100.0000"} {
		check(s)
	}
}

func roundTrip(t *testing.T, r *InferenceRequest) {
	t.Helper()
	b, err := AppendRequest(nil, r)
	if err != nil {
		t.Fatalf("AppendRequest: %v", err)
	}
	got, err := DecodeRequest(b, DefaultLimits())
	if err != nil {
		t.Fatalf("DecodeRequest of re-encoded %s: %v", b, err)
	}
	assertEqual(t, r, got)
}

func assertEqual(t *testing.T, want, got any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("mismatch (-want +got):\n- %+v\n+ %+v", want, got)
	}
}

// TestDecodeFP32MatchesStrconv checks the decoder's one-pass FP32 path element by element
// against strconv.ParseFloat(s, 32) on float64-precision text (Python's json output form).
func TestDecodeFP32MatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	texts := make([]string, 20000)
	for i := range texts {
		switch i % 3 {
		case 0:
			texts[i] = strconv.FormatFloat(rng.Float64(), 'g', -1, 64)
		case 1:
			texts[i] = strconv.FormatFloat(rng.NormFloat64()*100, 'f', rng.IntN(12), 64)
		default:
			texts[i] = strconv.FormatFloat(float64(rng.IntN(256))/255, 'g', -1, 64)
		}
	}
	body := `{"inputs":[{"name":"x","datatype":"FP32","shape":[` + strconv.Itoa(len(texts)) + `],"data":[` + strings.Join(texts, ",") + `]}]}`
	r, err := DecodeRequest([]byte(body), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		want, _ := strconv.ParseFloat(s, 32)
		if got := r.Inputs[0].FP32[i]; got != float32(want) {
			t.Fatalf("element %d %q: decoded %v, strconv %v", i, s, got, float32(want))
		}
	}
}
