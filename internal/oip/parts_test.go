package oip

import (
	"bytes"
	"testing"
)

// The streamed parts of a binary request are byte for byte the assembled body, and decode back.
func TestRequestBinaryPartsMatchBody(t *testing.T) {
	r := &InferenceRequest{ID: "x", Parameters: Parameters{"binary_data_output": true}, Inputs: []Tensor{
		NewFP32("a", []int64{2, 3}, []float32{1, -2, 3.5, 0, 1e-9, 7}),
		{Name: "b", Datatype: DatatypeINT64, Shape: []int64{2}, INT64: []int64{-1, 1 << 40}},
		{Name: "c", Datatype: DatatypeBOOL, Shape: []int64{2}, BOOL: []bool{true, false}},
		{Name: "d", Datatype: DatatypeBYTES, Shape: []int64{1}, BYTES: []string{"hi"}},
	}}
	body, headerLen, err := AppendRequestBinary(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	parts, size, err := requestBinaryParts(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.Join(parts, nil); !bytes.Equal(got, body) || int(size) != len(body) || len(parts[0]) != headerLen {
		t.Fatalf("parts %q (size %d, header %d) != body %q (header %d)", got, size, len(parts[0]), body, headerLen)
	}
	back, err := DecodeRequestBinary(body, headerLen, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if back.Inputs[0].FP32[2] != 3.5 || back.Inputs[1].INT64[1] != 1<<40 || !back.Inputs[2].BOOL[0] || back.Inputs[3].BYTES[0] != "hi" {
		t.Fatalf("decoded %+v", back.Inputs)
	}
}
