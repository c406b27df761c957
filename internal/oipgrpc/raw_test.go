package oipgrpc

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"google.golang.org/protobuf/proto"
)

func TestRawRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		t    oip.Tensor
		raw  []byte
	}{
		{"FP32", oip.NewFP32("a", []int64{2}, []float32{1, -2}), []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0}},
		{"FP64", oip.Tensor{Name: "a", Datatype: oip.DatatypeFP64, Shape: []int64{1}, FP64: []float64{0.5}}, []byte{0, 0, 0, 0, 0, 0, 0xe0, 0x3f}},
		{"INT32", oip.Tensor{Name: "a", Datatype: oip.DatatypeINT32, Shape: []int64{1}, INT32: []int32{-2}}, []byte{0xfe, 0xff, 0xff, 0xff}},
		{"INT64", oip.Tensor{Name: "a", Datatype: oip.DatatypeINT64, Shape: []int64{1, 1}, INT64: []int64{258}}, []byte{2, 1, 0, 0, 0, 0, 0, 0}},
		{"BOOL", oip.Tensor{Name: "a", Datatype: oip.DatatypeBOOL, Shape: []int64{3}, BOOL: []bool{true, false, true}}, []byte{1, 0, 1}},
		{"BYTES", oip.Tensor{Name: "a", Datatype: oip.DatatypeBYTES, Shape: []int64{2}, BYTES: []string{"ab", ""}}, []byte{2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0}},
		{"empty", oip.NewFP32("a", []int64{0, 3}, []float32{}), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendRaw(nil, &tc.t)
			if err != nil || !reflect.DeepEqual(tc.raw, got) && len(tc.raw)+len(got) > 0 {
				t.Errorf("AppendRaw = %x, %v; want %x", got, err, tc.raw)
			}
			back := oip.Tensor{Name: tc.t.Name, Datatype: tc.t.Datatype, Shape: tc.t.Shape}
			if err := DecodeRaw(&back, tc.raw, oip.DefaultLimits()); err != nil {
				t.Fatalf("DecodeRaw: %v", err)
			}
			if !reflect.DeepEqual(tc.t, back) {
				t.Errorf("round trip (-want +got)\n-%+v\n+%+v", tc.t, back)
			}
		})
	}
}

func TestDecodeRawErrors(t *testing.T) {
	lim := oip.DefaultLimits()
	lim.MaxTensorElements = 10
	tests := []struct {
		name  string
		dt    oip.Datatype
		shape []int64
		raw   []byte
		want  error
	}{
		{"short FP32", oip.DatatypeFP32, []int64{2}, make([]byte, 7), oip.ErrBadRequest},
		{"long INT64", oip.DatatypeINT64, []int64{1}, make([]byte, 9), oip.ErrBadRequest},
		{"BOOL not 0 or 1", oip.DatatypeBOOL, []int64{2}, []byte{1, 2}, oip.ErrBadRequest},
		{"BYTES truncated prefix", oip.DatatypeBYTES, []int64{1}, []byte{1, 0, 0}, oip.ErrBadRequest},
		{"BYTES length beyond data", oip.DatatypeBYTES, []int64{1}, []byte{9, 0, 0, 0, 'a'}, oip.ErrBadRequest},
		{"BYTES huge length", oip.DatatypeBYTES, []int64{1}, []byte{0xff, 0xff, 0xff, 0xff, 'a'}, oip.ErrBadRequest},
		{"BYTES trailing data", oip.DatatypeBYTES, []int64{1}, []byte{0, 0, 0, 0, 'z'}, oip.ErrBadRequest},
		{"BYTES count beyond data", oip.DatatypeBYTES, []int64{5}, []byte{0, 0, 0, 0}, oip.ErrBadRequest},
		{"over element limit", oip.DatatypeFP32, []int64{11}, make([]byte, 44), oip.ErrTooLarge},
		{"overflowing shape", oip.DatatypeFP32, []int64{math.MaxInt64, 2}, nil, oip.ErrBadRequest},
		{"unsupported datatype", "UINT8", []int64{1}, []byte{1}, oip.ErrBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tt := oip.Tensor{Name: "in", Datatype: tc.dt, Shape: tc.shape}
			if err := DecodeRaw(&tt, tc.raw, lim); !errors.Is(err, tc.want) {
				t.Errorf("DecodeRaw = %v, want %v", err, tc.want)
			}
		})
	}
}

// FuzzDecodeRaw feeds arbitrary raw contents and shapes to the decoder: it never panics, never
// allocates beyond the limits, and whatever it accepts encodes back to the same bytes.
func FuzzDecodeRaw(f *testing.F) {
	f.Add(byte(0), int64(2), int64(1), []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0})
	f.Add(byte(5), int64(2), int64(1), []byte{2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0})
	f.Add(byte(4), int64(3), int64(1), []byte{1, 0, 1})
	f.Add(byte(3), int64(1), int64(1), []byte{2, 1, 0, 0, 0, 0, 0, 0})
	types := []oip.Datatype{oip.DatatypeFP32, oip.DatatypeFP64, oip.DatatypeINT32, oip.DatatypeINT64, oip.DatatypeBOOL, oip.DatatypeBYTES, "FP16"}
	lim := oip.DefaultLimits()
	lim.MaxTensorElements = 1 << 16
	f.Fuzz(func(t *testing.T, dt byte, d0, d1 int64, raw []byte) {
		tt := oip.Tensor{Name: "in", Datatype: types[int(dt)%len(types)], Shape: []int64{d0, d1}}
		if err := DecodeRaw(&tt, raw, lim); err != nil {
			if !errors.Is(err, oip.ErrBadRequest) && !errors.Is(err, oip.ErrTooLarge) {
				t.Fatalf("error %v wraps neither ErrBadRequest nor ErrTooLarge", err)
			}
			return
		}
		if n, _ := oip.ShapeElements(tt.Shape); int64(tt.Len()) != n {
			t.Fatalf("decoded %d elements for shape %v", tt.Len(), tt.Shape)
		}
		back, err := AppendRaw(nil, &tt)
		if err != nil {
			t.Fatal(err)
		}
		if string(back) != string(raw) {
			t.Fatalf("re-encoded %x, want %x", back, raw)
		}
	})
}

// FuzzDecodeRequest feeds arbitrary protobuf bytes through proto.Unmarshal and DecodeRequest: no
// panic, errors wrap the oip sentinels, and an accepted request has every tensor's element count
// equal to its shape's.
func FuzzDecodeRequest(f *testing.F) {
	seed := func(raw bool) []byte {
		in, err := EncodeRequest("m", "", &oip.InferenceRequest{ID: "x", Parameters: oip.Parameters{"latency_ms": int64(5)},
			Inputs: []oip.Tensor{oip.NewFP32("a", []int64{1, 2}, []float32{1, 2}), {Name: "b", Datatype: oip.DatatypeBYTES, Shape: []int64{1}, BYTES: []string{"hi"}}}}, raw)
		if err != nil {
			f.Fatal(err)
		}
		b, err := proto.Marshal(in)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(seed(true))
	f.Add(seed(false))
	{ // Triton's double_param and uint64_param
		in, err := EncodeRequest("m", "", &oip.InferenceRequest{Inputs: []oip.Tensor{oip.NewFP32("a", []int64{1}, []float32{1})}}, true)
		if err != nil {
			f.Fatal(err)
		}
		in.Parameters = map[string]*pb.InferParameter{
			"timeout":    {ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: 1 << 63}},
			"latency_ms": {ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: 2.5}},
		}
		b, err := proto.Marshal(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	lim := oip.DefaultLimits()
	lim.MaxTensorElements, lim.MaxTotalElements = 1<<16, 1<<16
	f.Fuzz(func(t *testing.T, b []byte) {
		var in pb.ModelInferRequest
		if proto.Unmarshal(b, &in) != nil {
			return
		}
		req, err := DecodeRequest(&in, lim)
		if err != nil {
			if !errors.Is(err, oip.ErrBadRequest) && !errors.Is(err, oip.ErrTooLarge) {
				t.Fatalf("error %v wraps neither ErrBadRequest nor ErrTooLarge", err)
			}
			return
		}
		for _, tt := range req.Inputs {
			if n, err := oip.ShapeElements(tt.Shape); err != nil || int64(tt.Len()) != n {
				t.Fatalf("input %q: %d elements for shape %v", tt.Name, tt.Len(), tt.Shape)
			}
		}
		// Whatever numbers the parameters decoded to, the SLO parser answers or refuses them.
		if _, err := oip.ParseSLO(req.Parameters); err != nil && !errors.Is(err, oip.ErrBadRequest) {
			t.Fatalf("ParseSLO: %v does not wrap ErrBadRequest", err)
		}
	})
}
