package oip

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Non-finite inputs are refused with ErrBadRequest naming the tensor and the element, for every
// protocol (REST JSON cannot carry them; the binary extension, gRPC typed and raw contents can).
func TestValidateRequestRefusesNonFinite(t *testing.T) {
	md := &ModelMetadata{Name: "m", Inputs: []TensorMetadata{
		{Name: "x", Datatype: DatatypeFP32, Shape: []int64{-1, 2}},
		{Name: "z", Datatype: DatatypeFP64, Shape: []int64{-1, 1}},
	}}
	f32 := func(v float32) *InferenceRequest {
		return &InferenceRequest{Inputs: []Tensor{NewFP32("x", []int64{1, 2}, []float32{1, v}),
			{Name: "z", Datatype: DatatypeFP64, Shape: []int64{1, 1}, FP64: []float64{0}}}}
	}
	for _, c := range []struct {
		name string
		req  *InferenceRequest
		want string
	}{
		{"finite", f32(2), ""},
		{"NaN", f32(float32(math.NaN())), `input "x": element 1 is not a finite number`},
		{"+Inf", f32(float32(math.Inf(1))), `input "x": element 1`},
		{"FP64 -Inf", &InferenceRequest{Inputs: []Tensor{NewFP32("x", []int64{1, 2}, []float32{1, 2}),
			{Name: "z", Datatype: DatatypeFP64, Shape: []int64{1, 1}, FP64: []float64{math.Inf(-1)}}}}, `input "z": element 0`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateRequest(c.req, md)
			if c.want == "" {
				if err != nil {
					t.Fatalf("ValidateRequest: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ValidateRequest: %v, want ErrBadRequest containing %q", err, c.want)
			}
		})
	}
}
