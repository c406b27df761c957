package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrBadRequest marks a request the gateway refuses before queueing it (HTTP 400).
var ErrBadRequest = errors.New("bad request")

// Request is one validated inference request. The gateway keeps the original body, forwarded
// verbatim when the request is a batch of its own, and each input's flattened data, concatenated
// with other requests' data when it is batched.
type Request struct {
	// ID is the client's request id, echoed in the response.
	ID string
	// Rows is the request's batch dimension (the first dimension of every input).
	Rows int
	// Timeout overrides the model's SLO threshold for this request (OIP parameters.timeout); 0 = none.
	Timeout time.Duration

	body    []byte
	inputs  []input
	outputs []string
}

// input is one validated input tensor with its data flattened to comma-separated scalars.
type input struct {
	name     string
	datatype string
	shape    []int64
	flat     []byte
}

// ParseRequest validates an OIP v2 REST inference request body against the model's input schema
// (nil accepts any numeric inputs) and returns it ready for batching. Every error wraps
// ErrBadRequest and names the offending field.
func ParseRequest(body []byte, schema []TensorSpec) (*Request, error) {
	var wr inferRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return nil, fmt.Errorf("%w: decode body: %v", ErrBadRequest, err)
	}
	if len(wr.Inputs) == 0 {
		return nil, fmt.Errorf("%w: inputs: at least one input is required", ErrBadRequest)
	}
	r := &Request{ID: wr.ID, body: body, inputs: make([]input, 0, len(wr.Inputs))}
	us, err := parseTimeout(wr.Parameters)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	r.Timeout = time.Duration(us) * time.Microsecond
	for i, in := range wr.Inputs {
		if in.Name == "" {
			return nil, fmt.Errorf("%w: inputs[%d].name: must not be empty", ErrBadRequest, i)
		}
		if !numericTypes[in.Datatype] {
			return nil, fmt.Errorf("%w: inputs[%d].datatype: unsupported %q", ErrBadRequest, i, in.Datatype)
		}
		if len(in.Shape) == 0 {
			return nil, fmt.Errorf("%w: inputs[%d].shape: must have a batch dimension", ErrBadRequest, i)
		}
		want := int64(1)
		for j, d := range in.Shape {
			if d <= 0 || d > 1<<24 {
				return nil, fmt.Errorf("%w: inputs[%d].shape[%d]: must be in [1, 2^24], got %d", ErrBadRequest, i, j, d)
			}
			want *= d
			if want > 1<<28 {
				return nil, fmt.Errorf("%w: inputs[%d].shape: too many elements", ErrBadRequest, i)
			}
		}
		if len(in.Data) == 0 {
			return nil, fmt.Errorf("%w: inputs[%d].data: missing", ErrBadRequest, i)
		}
		flat, n, err := flattenData(make([]byte, 0, len(in.Data)), in.Data)
		if err != nil {
			return nil, fmt.Errorf("%w: inputs[%d].%v", ErrBadRequest, i, err)
		}
		if int64(n) != want {
			return nil, fmt.Errorf("%w: inputs[%d].data: shape %v needs %d elements, got %d", ErrBadRequest, i, in.Shape, want, n)
		}
		if i == 0 {
			r.Rows = int(in.Shape[0])
		} else if int(in.Shape[0]) != r.Rows {
			return nil, fmt.Errorf("%w: inputs[%d].shape[0]: %d differs from inputs[0]'s %d", ErrBadRequest, i, in.Shape[0], r.Rows)
		}
		r.inputs = append(r.inputs, input{name: in.Name, datatype: in.Datatype, shape: in.Shape, flat: flat})
	}
	for i, o := range wr.Outputs {
		var ro struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(o, &ro); err != nil || ro.Name == "" {
			return nil, fmt.Errorf("%w: outputs[%d].name: must be a non-empty string", ErrBadRequest, i)
		}
		r.outputs = append(r.outputs, ro.Name)
	}
	if schema != nil {
		if err := r.check(schema); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// check verifies the request's inputs against the model's schema.
func (r *Request) check(schema []TensorSpec) error {
	if len(r.inputs) != len(schema) {
		return fmt.Errorf("%w: inputs: model takes %d inputs, got %d", ErrBadRequest, len(schema), len(r.inputs))
	}
	for i, in := range r.inputs {
		var s *TensorSpec
		for k := range schema {
			if schema[k].Name == in.name {
				s = &schema[k]
				break
			}
		}
		if s == nil {
			return fmt.Errorf("%w: inputs[%d].name: model has no input %q", ErrBadRequest, i, in.name)
		}
		if s.Datatype != "" && s.Datatype != in.datatype {
			return fmt.Errorf("%w: inputs[%d].datatype: model wants %s, got %s", ErrBadRequest, i, s.Datatype, in.datatype)
		}
		if len(s.Shape) > 0 {
			if len(s.Shape) != len(in.shape) {
				return fmt.Errorf("%w: inputs[%d].shape: model wants %v, got %v", ErrBadRequest, i, s.Shape, in.shape)
			}
			for j := 1; j < len(s.Shape); j++ {
				if s.Shape[j] >= 0 && s.Shape[j] != in.shape[j] {
					return fmt.Errorf("%w: inputs[%d].shape: model wants %v, got %v", ErrBadRequest, i, s.Shape, in.shape)
				}
			}
		}
	}
	return nil
}

// compatible reports whether r's inputs can be concatenated with first's along the batch dimension.
func (r *Request) compatible(first *Request) bool {
	if len(r.inputs) != len(first.inputs) {
		return false
	}
	for i := range r.inputs {
		a, b := r.inputs[i], first.inputs[i]
		if a.name != b.name || a.datatype != b.datatype || len(a.shape) != len(b.shape) {
			return false
		}
		for j := 1; j < len(a.shape); j++ {
			if a.shape[j] != b.shape[j] {
				return false
			}
		}
	}
	return true
}
