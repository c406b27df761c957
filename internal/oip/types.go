package oip

import (
	"fmt"
	"time"
)

// Datatype is an OIP v2 tensor element type, spelled as on the wire ("FP32", "INT64", ...).
type Datatype string

// The datatypes this package decodes and encodes. Other OIP datatypes (FP16, INT8, UINT8, ...)
// are rejected with ErrBadRequest naming the type.
const (
	DatatypeFP32  Datatype = "FP32"
	DatatypeFP64  Datatype = "FP64"
	DatatypeINT32 Datatype = "INT32"
	DatatypeINT64 Datatype = "INT64"
	DatatypeBOOL  Datatype = "BOOL"
	DatatypeBYTES Datatype = "BYTES"
)

// Valid reports whether d is one of the supported datatypes.
func (d Datatype) Valid() bool {
	switch d {
	case DatatypeFP32, DatatypeFP64, DatatypeINT32, DatatypeINT64, DatatypeBOOL, DatatypeBYTES:
		return true
	}
	return false
}

// Parameters are the free-form "parameters" object of requests, tensors and responses. Values are
// string, bool or a number; the decoder yields numbers as json.Number (exact, so 64-bit ids survive)
// and the encoder also accepts int, int64, uint64, float32 and float64. Nested objects and arrays
// are rejected, as the protocol's $parameter type allows none.
type Parameters map[string]any

// Tensor is one named input or output tensor. Exactly one data slice, the one matching Datatype,
// holds the elements in row-major order; the first shape dimension is the batch (rows).
type Tensor struct {
	Name       string
	Datatype   Datatype
	Shape      []int64
	Parameters Parameters

	FP32  []float32
	FP64  []float64
	INT32 []int32
	INT64 []int64
	BOOL  []bool
	BYTES []string
}

// NewFP32 returns an FP32 tensor; data is used, not copied.
func NewFP32(name string, shape []int64, data []float32) Tensor {
	return Tensor{Name: name, Datatype: DatatypeFP32, Shape: shape, FP32: data}
}

// Len returns the number of elements held in the data slice that matches t.Datatype.
func (t *Tensor) Len() int {
	switch t.Datatype {
	case DatatypeFP32:
		return len(t.FP32)
	case DatatypeFP64:
		return len(t.FP64)
	case DatatypeINT32:
		return len(t.INT32)
	case DatatypeINT64:
		return len(t.INT64)
	case DatatypeBOOL:
		return len(t.BOOL)
	case DatatypeBYTES:
		return len(t.BYTES)
	}
	return 0
}

// Rows returns the first dimension of t's shape, or 1 for a scalar.
func (t *Tensor) Rows() int64 {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[0]
}

// ShapeElements returns the product of shape, or an error when a dimension is negative or the
// product overflows int64.
func ShapeElements(shape []int64) (int64, error) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape[%d] = %d: dimensions must be >= 0", i, d)
		}
		if d != 0 && n > (1<<62)/d {
			return 0, fmt.Errorf("shape %v: element count overflows", shape)
		}
		n *= d
	}
	return n, nil
}

// RequestedOutput names one output the client wants back; when a request lists none, all outputs
// are returned.
type RequestedOutput struct {
	Name       string
	Parameters Parameters
}

// InferenceRequest is the body of POST /v2/models/{m}[/versions/{v}]/infer.
type InferenceRequest struct {
	ID         string
	Parameters Parameters
	Inputs     []Tensor
	Outputs    []RequestedOutput
}

// Input returns the input named name, or nil.
func (r *InferenceRequest) Input(name string) *Tensor {
	for i := range r.Inputs {
		if r.Inputs[i].Name == name {
			return &r.Inputs[i]
		}
	}
	return nil
}

// InferenceResponse is the body of a successful inference.
type InferenceResponse struct {
	ModelName    string
	ModelVersion string
	ID           string
	Parameters   Parameters
	Outputs      []Tensor

	// ServiceTime is how long the backend computed the batch; not part of the JSON body, it travels
	// in the Sloserve-Service-Time-Us header (HeaderServiceTime). Zero means unknown.
	ServiceTime time.Duration
}

// Output returns the output named name, or nil.
func (r *InferenceResponse) Output(name string) *Tensor {
	for i := range r.Outputs {
		if r.Outputs[i].Name == name {
			return &r.Outputs[i]
		}
	}
	return nil
}

// HeaderServiceTime is the response header carrying the backend's batch service time in
// microseconds (integer).
const HeaderServiceTime = "Sloserve-Service-Time-Us"

// ServerMetadata is the body of GET /v2.
type ServerMetadata struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

// TensorMetadata describes one model input or output; a -1 dimension is a wildcard.
type TensorMetadata struct {
	Name     string   `json:"name"`
	Datatype Datatype `json:"datatype"`
	Shape    []int64  `json:"shape"`
}

// ModelMetadata is the body of GET /v2/models/{m}[/versions/{v}].
type ModelMetadata struct {
	Name     string           `json:"name"`
	Versions []string         `json:"versions,omitempty"`
	Platform string           `json:"platform"`
	Inputs   []TensorMetadata `json:"inputs"`
	Outputs  []TensorMetadata `json:"outputs"`
}

// RepositoryIndexRequest is the optional body of POST /v2/repository/index.
type RepositoryIndexRequest struct {
	// Ready, when true, lists only models that are ready for inference.
	Ready bool `json:"ready,omitempty"`
}

// Model states reported in a RepositoryIndexEntry (Triton's repository extension).
const (
	StateReady       = "READY"
	StateUnavailable = "UNAVAILABLE"
	StateLoading     = "LOADING"
)

// RepositoryIndexEntry is one element of the POST /v2/repository/index answer.
type RepositoryIndexEntry struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	State   string `json:"state,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// ErrorResponse is the body of every error answer: {"error": "..."}.
type ErrorResponse struct {
	Error string `json:"error"`
}
