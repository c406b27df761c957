package oip

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateRequest(t *testing.T) {
	pair := &ModelMetadata{Name: "pair", Inputs: []TensorMetadata{
		{Name: "a", Datatype: DatatypeINT64, Shape: []int64{-1}},
		{Name: "b", Datatype: DatatypeINT64, Shape: []int64{-1}},
	}, Outputs: []TensorMetadata{{Name: "s", Datatype: DatatypeINT64, Shape: []int64{-1}}}}
	seq := &ModelMetadata{Name: "seq", Inputs: []TensorMetadata{
		{Name: "tokens", Datatype: DatatypeINT64, Shape: []int64{-1}},
		{Name: "scale", Datatype: DatatypeFP32, Shape: []int64{2}},
	}}
	i64 := func(name string, v ...int64) Tensor {
		return Tensor{Name: name, Datatype: DatatypeINT64, Shape: []int64{int64(len(v))}, INT64: v}
	}
	for _, tc := range []struct {
		name string
		md   *ModelMetadata
		in   []Tensor
		out  []RequestedOutput
		want string // "" = accepted; else a substring of the error
	}{
		{"pair agrees", pair, []Tensor{i64("a", 1, 2), i64("b", 3, 4)}, nil, ""},
		{"pair rows differ", pair, []Tensor{i64("a", 1), i64("b")}, nil, `input "b" has 0 rows, input "a" has 1`},
		{"pair missing b", pair, []Tensor{i64("a", 1)}, nil, `missing input "b"`},
		{"unknown input", pair, []Tensor{i64("a", 1), i64("b", 1), i64("c", 1)}, nil, `"c": model "pair" has no such input`},
		{"wrong datatype", pair, []Tensor{i64("a", 1), NewFP32("b", []int64{1}, []float32{1})}, nil, "datatype FP32"},
		{"wrong rank", pair, []Tensor{i64("a", 1), {Name: "b", Datatype: DatatypeINT64, Shape: []int64{1, 1}, INT64: []int64{1}}}, nil, "shape [1 1]"},
		{"unknown output", pair, []Tensor{i64("a", 1), i64("b", 1)}, []RequestedOutput{{Name: "z"}}, `requested output "z"`},
		// Not every input has a batch dimension: lengths are free to differ.
		{"non-batching model", seq, []Tensor{i64("tokens", 1, 2, 3), NewFP32("scale", []int64{2}, []float32{1, 2})}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRequest(&InferenceRequest{Inputs: tc.in, Outputs: tc.out}, tc.md)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("err = %v, want accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadRequest)):
				t.Fatalf("err = %v, want ErrBadRequest containing %q", err, tc.want)
			}
		})
	}
}
