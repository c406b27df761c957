package onnx

import (
	"fmt"
	"math"
)

// IRVersion is the ONNX IR version written by Marshal (IR v8, ONNX 1.10+).
const IRVersion = 8

// OpsetVersion is the default-domain operator set version written by Marshal.
const OpsetVersion = 13

// DataType is an ONNX TensorProto.DataType value.
type DataType int32

// The element types this package reads and writes.
const (
	// Float is TensorProto.FLOAT (float32).
	Float DataType = 1
	// Int64 is TensorProto.INT64.
	Int64 DataType = 7
)

// String returns the data type's ONNX name ("FLOAT", "INT64", or "TYPE(n)").
func (d DataType) String() string {
	switch d {
	case Float:
		return "FLOAT"
	case Int64:
		return "INT64"
	}
	return fmt.Sprintf("TYPE(%d)", int32(d))
}

// Model is an ONNX ModelProto reduced to what sloserve needs: one graph in the default domain.
type Model struct {
	IRVersion    int64
	OpsetVersion int64 // version of the default ("" / "ai.onnx") domain
	ProducerName string
	ProducerVer  string
	DocString    string
	Metadata     map[string]string // metadata_props
	Graph        Graph
}

// Graph is an ONNX GraphProto: nodes in topological order, initializers, graph inputs and outputs.
type Graph struct {
	Name         string
	Nodes        []Node
	Initializers []Tensor
	Inputs       []ValueInfo
	Outputs      []ValueInfo
}

// Node is one operator application (NodeProto).
type Node struct {
	Name       string
	OpType     string
	Domain     string
	Inputs     []string
	Outputs    []string
	Attributes []Attribute
}

// AttrType is an ONNX AttributeProto.AttributeType value.
type AttrType int32

// The attribute types this package reads and writes.
const (
	// AttrFloat is a single float32 attribute.
	AttrFloat AttrType = 1
	// AttrInt is a single int64 attribute.
	AttrInt AttrType = 2
	// AttrString is a single string attribute.
	AttrString AttrType = 3
	// AttrFloats is a list of float32.
	AttrFloats AttrType = 6
	// AttrInts is a list of int64.
	AttrInts AttrType = 7
)

// Attribute is one node attribute (AttributeProto); only the field matching Type is meaningful.
type Attribute struct {
	Name   string
	Type   AttrType
	F      float32
	I      int64
	S      string
	Floats []float32
	Ints   []int64
}

// Tensor is a constant tensor (TensorProto) of FLOAT or INT64 elements.
type Tensor struct {
	Name      string
	DataType  DataType
	Dims      []int64
	FloatData []float32 // when DataType == Float
	Int64Data []int64   // when DataType == Int64
}

// ValueInfo names a graph input or output with its element type and shape; a negative
// dimension (or one with a DimParam) is dynamic.
type ValueInfo struct {
	Name     string
	ElemType DataType
	Shape    []Dim
}

// Dim is one dimension of a ValueInfo shape: a fixed Value, or a symbolic Param such as "N".
type Dim struct {
	Value int64
	Param string
}

// Dims returns the shape with -1 for every symbolic or unknown dimension.
func (v ValueInfo) Dims() []int64 {
	out := make([]int64, len(v.Shape))
	for i, d := range v.Shape {
		if d.Param != "" || d.Value <= 0 {
			out[i] = -1
		} else {
			out[i] = d.Value
		}
	}
	return out
}

// Attr returns the node's attribute with the given name and whether it exists.
func (n Node) Attr(name string) (Attribute, bool) {
	for _, a := range n.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return Attribute{}, false
}

// AttrInt returns the named int attribute, or def when absent.
func (n Node) AttrInt(name string, def int64) int64 {
	if a, ok := n.Attr(name); ok && a.Type == AttrInt {
		return a.I
	}
	return def
}

// AttrFloat returns the named float attribute, or def when absent.
func (n Node) AttrFloat(name string, def float32) float32 {
	if a, ok := n.Attr(name); ok && a.Type == AttrFloat {
		return a.F
	}
	return def
}

// AttrInts returns the named ints attribute, or nil when absent.
func (n Node) AttrInts(name string) []int64 {
	if a, ok := n.Attr(name); ok && a.Type == AttrInts {
		return a.Ints
	}
	return nil
}

// NumElements returns the product of dims, or an error when a dimension is negative or the
// product overflows max.
func NumElements(dims []int64, max int64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d", d)
		}
		if d != 0 && n > max/d {
			return 0, fmt.Errorf("tensor of dims %v exceeds %d elements", dims, max)
		}
		n *= d
	}
	return n, nil
}

// Initializer returns the graph initializer with the given name.
func (g *Graph) Initializer(name string) (*Tensor, bool) {
	for i := range g.Initializers {
		if g.Initializers[i].Name == name {
			return &g.Initializers[i], true
		}
	}
	return nil, false
}

// Params returns the number of elements in all FLOAT initializers (the model's parameter count).
func (g *Graph) Params() int64 {
	var n int64
	for _, t := range g.Initializers {
		if t.DataType == Float {
			n += int64(len(t.FloatData))
		}
	}
	return n
}

// FloatTensor returns a FLOAT initializer tensor.
func FloatTensor(name string, dims []int64, data []float32) Tensor {
	return Tensor{Name: name, DataType: Float, Dims: append([]int64(nil), dims...), FloatData: data}
}

// Int64Tensor returns an INT64 initializer tensor.
func Int64Tensor(name string, dims []int64, data []int64) Tensor {
	return Tensor{Name: name, DataType: Int64, Dims: append([]int64(nil), dims...), Int64Data: data}
}

// IntAttr returns an int attribute.
func IntAttr(name string, v int64) Attribute { return Attribute{Name: name, Type: AttrInt, I: v} }

// FloatAttr returns a float attribute.
func FloatAttr(name string, v float32) Attribute { return Attribute{Name: name, Type: AttrFloat, F: v} }

// IntsAttr returns an ints attribute.
func IntsAttr(name string, v ...int64) Attribute {
	return Attribute{Name: name, Type: AttrInts, Ints: v}
}

// Validate checks the structural invariants the runtimes rely on: names are set, initializer
// data matches its dims, every node input is produced before it is used (topological order).
func (m *Model) Validate() error {
	g := &m.Graph
	defined := map[string]bool{"": true} // "" marks an omitted optional input
	for i, t := range g.Initializers {
		if t.Name == "" {
			return fmt.Errorf("onnx: initializer %d has no name", i)
		}
		n, err := NumElements(t.Dims, math.MaxInt32)
		if err != nil {
			return fmt.Errorf("onnx: initializer %q: %w", t.Name, err)
		}
		switch t.DataType {
		case Float:
			if int64(len(t.FloatData)) != n {
				return fmt.Errorf("onnx: initializer %q: %d floats for dims %v", t.Name, len(t.FloatData), t.Dims)
			}
		case Int64:
			if int64(len(t.Int64Data)) != n {
				return fmt.Errorf("onnx: initializer %q: %d int64s for dims %v", t.Name, len(t.Int64Data), t.Dims)
			}
		default:
			return fmt.Errorf("onnx: initializer %q: unsupported data type %v", t.Name, t.DataType)
		}
		defined[t.Name] = true
	}
	if len(g.Inputs) == 0 || len(g.Outputs) == 0 {
		return fmt.Errorf("onnx: graph needs at least one input and one output")
	}
	for _, in := range g.Inputs {
		if in.Name == "" {
			return fmt.Errorf("onnx: graph input with no name")
		}
		defined[in.Name] = true
	}
	for i, n := range g.Nodes {
		if n.OpType == "" {
			return fmt.Errorf("onnx: node %d (%q) has no op_type", i, n.Name)
		}
		for _, in := range n.Inputs {
			if !defined[in] {
				return fmt.Errorf("onnx: node %d (%s %q) uses %q before it is defined", i, n.OpType, n.Name, in)
			}
		}
		for _, out := range n.Outputs {
			if out == "" {
				continue
			}
			defined[out] = true
		}
	}
	for _, out := range g.Outputs {
		if !defined[out.Name] {
			return fmt.Errorf("onnx: graph output %q is never produced", out.Name)
		}
	}
	return nil
}

// Predecessors returns, for each node, the indices of the nodes that produce its inputs (graph
// inputs and initializers have no producer): the edges E of the task graph G = (O, E) that
// INFless's combined operator profiling (§3.3) splits into sequence chains and parallel branches.
func (g *Graph) Predecessors() [][]int {
	producer := map[string]int{}
	for i, n := range g.Nodes {
		for _, out := range n.Outputs {
			if out != "" {
				producer[out] = i
			}
		}
	}
	preds := make([][]int, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if p, ok := producer[in]; ok && p != i {
				preds[i] = append(preds[i], p)
			}
		}
	}
	return preds
}
