package oip

import (
	"fmt"
	"slices"
)

// Rows returns the batch size of a request: the first dimension shared by all its inputs. It is
// an error (wrapping ErrBadRequest) for inputs to disagree or to be scalars.
func Rows(r *InferenceRequest) (int64, error) {
	if len(r.Inputs) == 0 {
		return 0, fmt.Errorf("%w: request has no inputs", ErrBadRequest)
	}
	var n int64
	for i := range r.Inputs {
		in := &r.Inputs[i]
		if len(in.Shape) == 0 {
			return 0, fmt.Errorf("%w: input %q is a scalar; batching needs a first (batch) dimension", ErrBadRequest, in.Name)
		}
		if i == 0 {
			n = in.Shape[0]
		} else if in.Shape[0] != n {
			return 0, fmt.Errorf("%w: input %q has %d rows, input %q has %d", ErrBadRequest, in.Name, in.Shape[0], r.Inputs[0].Name, n)
		}
	}
	return n, nil
}

// Concat merges requests for one model into one batch request, as the gateway does before it
// dispatches a batch: inputs with the same name are concatenated along the first dimension, in
// the order of reqs. Every request must have the same input names, datatypes and trailing
// dimensions. The merged request asks for the union of the requested outputs (all outputs if any
// request asked for all) and has no id or parameters. With one request, Concat returns it as is.
// Split undoes Concat on the response.
func Concat(reqs []*InferenceRequest) (*InferenceRequest, error) {
	switch len(reqs) {
	case 0:
		return nil, fmt.Errorf("%w: concat of no requests", ErrBadRequest)
	case 1:
		return reqs[0], nil
	}
	first := reqs[0]
	total := int64(0)
	for k, r := range reqs {
		n, err := Rows(r)
		if err != nil {
			return nil, fmt.Errorf("concat request %d: %w", k, err)
		}
		total += n
		if len(r.Inputs) != len(first.Inputs) {
			return nil, fmt.Errorf("%w: concat request %d: %d inputs, request 0 has %d", ErrBadRequest, k, len(r.Inputs), len(first.Inputs))
		}
		for i := range first.Inputs {
			a := &first.Inputs[i]
			b := r.Input(a.Name)
			if b == nil {
				return nil, fmt.Errorf("%w: concat request %d: missing input %q", ErrBadRequest, k, a.Name)
			}
			if b.Datatype != a.Datatype || !slices.Equal(b.Shape[1:], a.Shape[1:]) {
				return nil, fmt.Errorf("%w: concat request %d: input %q is %s%v, request 0 has %s%v", ErrBadRequest, k, a.Name, b.Datatype, b.Shape, a.Datatype, a.Shape)
			}
		}
	}
	m := &InferenceRequest{Inputs: make([]Tensor, len(first.Inputs))}
	for i := range first.Inputs {
		a := &first.Inputs[i]
		shape := slices.Clone(a.Shape)
		shape[0] = total
		t := Tensor{Name: a.Name, Datatype: a.Datatype, Shape: shape}
		per := rowElements(a.Shape)
		n := int(total * per)
		switch a.Datatype {
		case DatatypeFP32:
			t.FP32 = make([]float32, 0, n)
		case DatatypeFP64:
			t.FP64 = make([]float64, 0, n)
		case DatatypeINT32:
			t.INT32 = make([]int32, 0, n)
		case DatatypeINT64:
			t.INT64 = make([]int64, 0, n)
		case DatatypeBOOL:
			t.BOOL = make([]bool, 0, n)
		case DatatypeBYTES:
			t.BYTES = make([]string, 0, n)
		}
		for _, r := range reqs {
			b := r.Input(a.Name)
			t.FP32 = append(t.FP32, b.FP32...)
			t.FP64 = append(t.FP64, b.FP64...)
			t.INT32 = append(t.INT32, b.INT32...)
			t.INT64 = append(t.INT64, b.INT64...)
			t.BOOL = append(t.BOOL, b.BOOL...)
			t.BYTES = append(t.BYTES, b.BYTES...)
		}
		if t.Len() != n {
			return nil, fmt.Errorf("%w: concat input %q: %d elements, shape %v needs %d", ErrBadRequest, a.Name, t.Len(), shape, n)
		}
		m.Inputs[i] = t
	}
	for _, r := range reqs {
		if len(r.Outputs) == 0 {
			m.Outputs = nil
			break
		}
		for _, o := range r.Outputs {
			if !slices.ContainsFunc(m.Outputs, func(x RequestedOutput) bool { return x.Name == o.Name }) {
				m.Outputs = append(m.Outputs, RequestedOutput{Name: o.Name})
			}
		}
	}
	return m, nil
}

// rowElements is the number of elements in one row (the product of shape[1:]).
func rowElements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape[1:] {
		n *= d
	}
	return n
}

// Split cuts the response to a Concat of reqs into one response per request, by rows: request k
// gets rows [sum of earlier rows, + its rows) of every output it asked for, with its own id. The
// returned data slices alias resp's (no copy); ModelName, ModelVersion, Parameters and
// ServiceTime are shared. Every output must have the concatenated row count as first dimension.
func Split(resp *InferenceResponse, reqs []*InferenceRequest) ([]*InferenceResponse, error) {
	rows := make([]int64, len(reqs))
	total := int64(0)
	for k, r := range reqs {
		n, err := Rows(r)
		if err != nil {
			return nil, fmt.Errorf("split request %d: %w", k, err)
		}
		rows[k] = n
		total += n
	}
	for i := range resp.Outputs {
		o := &resp.Outputs[i]
		if len(o.Shape) == 0 || o.Shape[0] != total {
			return nil, fmt.Errorf("%w: split output %q: shape %v, want first dimension %d (the batch)", ErrInternal, o.Name, o.Shape, total)
		}
		if want := total * rowElements(o.Shape); int64(o.Len()) != want {
			return nil, fmt.Errorf("%w: split output %q: %d elements, shape %v needs %d", ErrInternal, o.Name, o.Len(), o.Shape, want)
		}
	}
	out := make([]*InferenceResponse, len(reqs))
	start := int64(0)
	for k, r := range reqs {
		res := &InferenceResponse{
			ModelName: resp.ModelName, ModelVersion: resp.ModelVersion, ID: r.ID,
			Parameters: resp.Parameters, ServiceTime: resp.ServiceTime,
			Outputs: make([]Tensor, 0, len(resp.Outputs)),
		}
		for i := range resp.Outputs {
			o := &resp.Outputs[i]
			if len(r.Outputs) > 0 && !slices.ContainsFunc(r.Outputs, func(x RequestedOutput) bool { return x.Name == o.Name }) {
				continue
			}
			per := rowElements(o.Shape)
			lo, hi := start*per, (start+rows[k])*per
			shape := slices.Clone(o.Shape)
			shape[0] = rows[k]
			t := Tensor{Name: o.Name, Datatype: o.Datatype, Shape: shape, Parameters: o.Parameters}
			switch o.Datatype {
			case DatatypeFP32:
				t.FP32 = o.FP32[lo:hi:hi]
			case DatatypeFP64:
				t.FP64 = o.FP64[lo:hi:hi]
			case DatatypeINT32:
				t.INT32 = o.INT32[lo:hi:hi]
			case DatatypeINT64:
				t.INT64 = o.INT64[lo:hi:hi]
			case DatatypeBOOL:
				t.BOOL = o.BOOL[lo:hi:hi]
			case DatatypeBYTES:
				t.BYTES = o.BYTES[lo:hi:hi]
			}
			res.Outputs = append(res.Outputs, t)
		}
		if len(r.Outputs) > 0 {
			res.Outputs = FilterOutputs(res.Outputs, r.Outputs)
		}
		out[k] = res
		start += rows[k]
	}
	return out, nil
}

// RequestBytes is the size of r's tensor data in Triton's binary layout, in bytes: what the
// gateway sends to a worker for it. BYTES elements count their length prefix.
func RequestBytes(r *InferenceRequest) int64 {
	var n int64
	for i := range r.Inputs {
		n += int64(blobSize(&r.Inputs[i]))
	}
	return n
}
