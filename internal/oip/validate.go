package oip

import (
	"fmt"
	"math"
)

// ValidateRequest checks a decoded request against a model's metadata: every declared input is
// present exactly once and no other; each has the declared datatype and rank, and every dimension
// equals the declared one unless that is -1 (a wildcard, typically the batch); when every declared
// input has a leading -1 (the model batches), all inputs agree on that first dimension, as Triton
// requires of a batching model and as Concat needs to merge requests; every requested output is
// declared; every FP32 and FP64 value is finite (NaN and ±Inf cannot be encoded as JSON, and a
// gateway merges one client's rows with others': a client that wants them must not be able to
// fail a batch it shares). Errors wrap ErrBadRequest and name the tensor.
func ValidateRequest(r *InferenceRequest, md *ModelMetadata) error {
	for i := range r.Inputs {
		in := &r.Inputs[i]
		if k := nonFinite(in); k >= 0 {
			return fmt.Errorf("%w: input %q: element %d is not a finite number (NaN or ±Inf are not accepted)", ErrBadRequest, in.Name, k)
		}
		spec := findMetadata(md.Inputs, in.Name)
		if spec == nil {
			return fmt.Errorf("%w: input %q: model %q has no such input (inputs: %s)", ErrBadRequest, in.Name, md.Name, names(md.Inputs))
		}
		if in.Datatype != spec.Datatype {
			return fmt.Errorf("%w: input %q: datatype %s, model %q expects %s", ErrBadRequest, in.Name, in.Datatype, md.Name, spec.Datatype)
		}
		if !ShapeMatches(spec.Shape, in.Shape) {
			return fmt.Errorf("%w: input %q: shape %v, model %q expects %v (-1 = any)", ErrBadRequest, in.Name, in.Shape, md.Name, spec.Shape)
		}
	}
	for _, spec := range md.Inputs {
		if r.Input(spec.Name) == nil {
			return fmt.Errorf("%w: missing input %q of model %q", ErrBadRequest, spec.Name, md.Name)
		}
	}
	if batches(md) {
		if _, err := Rows(r); err != nil {
			return err
		}
	}
	for _, o := range r.Outputs {
		if findMetadata(md.Outputs, o.Name) == nil {
			return fmt.Errorf("%w: requested output %q: model %q has no such output (outputs: %s)", ErrBadRequest, o.Name, md.Name, names(md.Outputs))
		}
	}
	return nil
}

// ShapeMatches reports whether shape has the rank of spec and equals it in every dimension where
// spec is not -1.
func ShapeMatches(spec, shape []int64) bool {
	if len(spec) != len(shape) {
		return false
	}
	for i, d := range spec {
		if d != -1 && d != shape[i] {
			return false
		}
	}
	return true
}

func findMetadata(ts []TensorMetadata, name string) *TensorMetadata {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

func names(ts []TensorMetadata) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", t.Name)
	}
	return s
}

// FilterOutputs keeps only the outputs the request asked for, in the requested order; with no
// requested outputs it returns outs unchanged.
func FilterOutputs(outs []Tensor, requested []RequestedOutput) []Tensor {
	if len(requested) == 0 {
		return outs
	}
	kept := make([]Tensor, 0, len(requested))
	for _, o := range requested {
		for i := range outs {
			if outs[i].Name == o.Name {
				kept = append(kept, outs[i])
				break
			}
		}
	}
	return kept
}

// batches reports whether every input of md has a leading -1 dimension, the batch.
func batches(md *ModelMetadata) bool {
	for _, in := range md.Inputs {
		if len(in.Shape) == 0 || in.Shape[0] != -1 {
			return false
		}
	}
	return len(md.Inputs) > 0
}

// nonFinite returns the index of t's first NaN or infinite value, or -1.
func nonFinite(t *Tensor) int {
	for k, v := range t.FP32 {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return k
		}
	}
	for k, v := range t.FP64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return k
		}
	}
	return -1
}
