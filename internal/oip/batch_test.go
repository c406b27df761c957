package oip

import (
	"errors"
	"testing"
)

func req(id string, rows int64, vals ...float32) *InferenceRequest {
	return &InferenceRequest{ID: id, Inputs: []Tensor{NewFP32("x", []int64{rows, 2}, vals)}}
}

func TestConcatSplit(t *testing.T) {
	a := req("a", 1, 1, 2)
	b := req("b", 2, 3, 4, 5, 6)
	b.Outputs = []RequestedOutput{{Name: "y"}}
	m, err := Concat([]*InferenceRequest{a, b})
	if err != nil {
		t.Fatalf("Concat: %v", err)
	}
	assertEqual(t, []Tensor{NewFP32("x", []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})}, m.Inputs)
	if m.Outputs != nil {
		t.Errorf("merged outputs (-want +got):\n- []\n+ %v", m.Outputs)
	}
	resp := &InferenceResponse{ModelName: "m", Outputs: []Tensor{
		NewFP32("y", []int64{3, 1}, []float32{10, 20, 30}),
		{Name: "label", Datatype: DatatypeINT64, Shape: []int64{3}, INT64: []int64{7, 8, 9}},
	}}
	parts, err := Split(resp, []*InferenceRequest{a, b})
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	want := []*InferenceResponse{
		{ModelName: "m", ID: "a", Outputs: []Tensor{NewFP32("y", []int64{1, 1}, []float32{10}),
			{Name: "label", Datatype: DatatypeINT64, Shape: []int64{1}, INT64: []int64{7}}}},
		{ModelName: "m", ID: "b", Outputs: []Tensor{NewFP32("y", []int64{2, 1}, []float32{20, 30})}},
	}
	assertEqual(t, want, parts)
}

func TestConcatErrors(t *testing.T) {
	tests := []struct {
		name string
		reqs []*InferenceRequest
	}{
		{"none", nil},
		{"trailing dims differ", []*InferenceRequest{req("a", 1, 1, 2), {Inputs: []Tensor{NewFP32("x", []int64{1, 3}, []float32{1, 2, 3})}}}},
		{"names differ", []*InferenceRequest{req("a", 1, 1, 2), {Inputs: []Tensor{NewFP32("z", []int64{1, 2}, []float32{1, 2})}}}},
		{"scalar", []*InferenceRequest{req("a", 1, 1, 2), {Inputs: []Tensor{NewFP32("x", []int64{}, []float32{1})}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Concat(tc.reqs); !errors.Is(err, ErrBadRequest) {
				t.Fatalf("Concat error = %v, want ErrBadRequest", err)
			}
		})
	}
}

func TestSplitRejectsWrongRows(t *testing.T) {
	resp := &InferenceResponse{Outputs: []Tensor{NewFP32("y", []int64{2}, []float32{1, 2})}}
	if _, err := Split(resp, []*InferenceRequest{req("a", 1, 1, 2)}); !errors.Is(err, ErrInternal) {
		t.Fatalf("Split error = %v, want ErrInternal", err)
	}
}
