package models

import (
	"errors"
	"fmt"
	"os"

	"github.com/sloserve/sloserve/internal/models/onnx"
)

// Runtime names accepted by Options.Runtime.
const (
	// RuntimeNative is the pure-Go interpreter (no native library needed).
	RuntimeNative = "native"
	// RuntimeONNXRuntime is ONNX Runtime through cgo (needs libonnxruntime.so).
	RuntimeONNXRuntime = "onnxruntime"
)

// Runtimes lists the runtime names, the default first.
var Runtimes = []string{RuntimeNative, RuntimeONNXRuntime}

// ErrRuntimeUnavailable is returned by Open when the requested runtime cannot run on this machine
// (for onnxruntime: the shared library is missing or fails to load, or the binary was built without cgo).
var ErrRuntimeUnavailable = errors.New("models: runtime unavailable")

// ErrUnsupported is returned by Open when the model uses an operator, attribute or data type the
// runtime does not implement.
var ErrUnsupported = errors.New("models: unsupported model")

// ErrBadInput is wrapped by Run errors caused by inputs that do not match the model's Metadata.
var ErrBadInput = errors.New("models: bad input")

// Options configures Open. The zero value opens the model with the native runtime.
type Options struct {
	// Runtime is RuntimeNative (default when empty) or RuntimeONNXRuntime.
	Runtime string
	// Name is the model name reported in Metadata; empty means the ONNX graph name.
	Name string
	// ORTLibrary is the path of libonnxruntime.so; empty means $ONNXRUNTIME_LIB, else
	// .cache/onnxruntime/libonnxruntime.so in the working directory or one of its parents.
	// Only the first successful onnxruntime Open in a process loads the library.
	ORTLibrary string
	// IntraOpThreads is ONNX Runtime's intra-op thread count (threads, ≥ 0); 0 means 1, which
	// keeps one model instance on one core so that service times are those of one instance.
	IntraOpThreads int
}

// Validate reports the first invalid field.
func (o Options) Validate() error {
	switch o.Runtime {
	case "", RuntimeNative, RuntimeONNXRuntime:
	default:
		return fmt.Errorf("models options: Runtime %q is not one of %v", o.Runtime, Runtimes)
	}
	if o.IntraOpThreads < 0 {
		return fmt.Errorf("models options: IntraOpThreads %d must be ≥ 0", o.IntraOpThreads)
	}
	return nil
}

// TensorInfo describes one model input or output: its name, its Open Inference Protocol datatype
// ("FP32") and its shape, with -1 for the dynamic batch dimension.
type TensorInfo struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// Metadata describes an opened model; the OIP layer checks requests against it.
type Metadata struct {
	Name    string       `json:"name"`
	Runtime string       `json:"runtime"`
	Inputs  []TensorInfo `json:"inputs"`
	Outputs []TensorInfo `json:"outputs"`
	// Params is the number of float parameters (initializer elements).
	Params int64 `json:"params"`
	// Nodes is the number of operator nodes in the graph.
	Nodes int `json:"nodes"`
}

// Open loads an ONNX model from its bytes with the runtime chosen in opts.
func Open(model []byte, opts Options) (Runner, Metadata, error) {
	if err := opts.Validate(); err != nil {
		return nil, Metadata{}, err
	}
	m, err := onnx.Unmarshal(model)
	if err != nil {
		return nil, Metadata{}, fmt.Errorf("open model: %w", err)
	}
	meta, err := metadataOf(m, opts)
	if err != nil {
		return nil, Metadata{}, err
	}
	switch opts.Runtime {
	case RuntimeONNXRuntime:
		r, err := openORT(model, meta, opts)
		if err != nil {
			return nil, Metadata{}, err
		}
		return r, meta, nil
	default:
		r, err := newNative(m, meta)
		if err != nil {
			return nil, Metadata{}, err
		}
		return r, meta, nil
	}
}

// OpenFile loads an ONNX model from a file with the runtime chosen in opts.
func OpenFile(path string, opts Options) (Runner, Metadata, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, Metadata{}, fmt.Errorf("open model: %w", err)
	}
	return Open(b, opts)
}

func metadataOf(m *onnx.Model, opts Options) (Metadata, error) {
	meta := Metadata{Name: opts.Name, Runtime: opts.Runtime, Params: m.Graph.Params(), Nodes: len(m.Graph.Nodes)}
	if meta.Name == "" {
		meta.Name = m.Graph.Name
	}
	if meta.Runtime == "" {
		meta.Runtime = RuntimeNative
	}
	info := func(v onnx.ValueInfo) (TensorInfo, error) {
		if v.ElemType != onnx.Float {
			return TensorInfo{}, fmt.Errorf("%w: tensor %q has element type %v, only FLOAT is served", ErrUnsupported, v.Name, v.ElemType)
		}
		return TensorInfo{Name: v.Name, Datatype: "FP32", Shape: v.Dims()}, nil
	}
	for _, v := range m.Graph.Inputs {
		if _, isInit := m.Graph.Initializer(v.Name); isInit {
			continue // IR < 4 style: initializers listed as inputs are not fed by callers
		}
		ti, err := info(v)
		if err != nil {
			return Metadata{}, err
		}
		meta.Inputs = append(meta.Inputs, ti)
	}
	for _, v := range m.Graph.Outputs {
		ti, err := info(v)
		if err != nil {
			return Metadata{}, err
		}
		meta.Outputs = append(meta.Outputs, ti)
	}
	return meta, nil
}

// CheckInputs reports (wrapping ErrBadInput) whether inputs match the model's inputs in count,
// name (when set), rank, fixed dimensions and data length, and returns the common batch size.
func (m Metadata) CheckInputs(inputs []Tensor) (batch int, err error) {
	if len(inputs) != len(m.Inputs) {
		return 0, fmt.Errorf("%w: %d inputs, model %q takes %d", ErrBadInput, len(inputs), m.Name, len(m.Inputs))
	}
	batch = -1
	for i, in := range inputs {
		want := m.Inputs[i]
		if in.Name != "" && in.Name != want.Name {
			return 0, fmt.Errorf("%w: input %d is named %q, want %q", ErrBadInput, i, in.Name, want.Name)
		}
		if len(in.Shape) != len(want.Shape) {
			return 0, fmt.Errorf("%w: input %q has shape %v, want %v", ErrBadInput, want.Name, in.Shape, want.Shape)
		}
		n := int64(1)
		for d, w := range want.Shape {
			g := in.Shape[d]
			if g <= 0 || (w > 0 && g != w) {
				return 0, fmt.Errorf("%w: input %q has shape %v, want %v", ErrBadInput, want.Name, in.Shape, want.Shape)
			}
			if n > (1<<31)/g {
				return 0, fmt.Errorf("%w: input %q shape %v is too large", ErrBadInput, want.Name, in.Shape)
			}
			n *= g
		}
		if int64(len(in.Data)) != n {
			return 0, fmt.Errorf("%w: input %q has %d values for shape %v", ErrBadInput, want.Name, len(in.Data), in.Shape)
		}
		if len(in.Shape) > 0 {
			if batch >= 0 && int(in.Shape[0]) != batch {
				return 0, fmt.Errorf("%w: inputs disagree on the batch size (%d and %d)", ErrBadInput, batch, in.Shape[0])
			}
			batch = int(in.Shape[0])
		}
	}
	if batch < 0 {
		batch = 1
	}
	return batch, nil
}
