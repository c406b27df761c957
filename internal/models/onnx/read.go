package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is wrapped by every Unmarshal error caused by bytes that are not a valid ModelProto
// of the supported subset.
var ErrMalformed = errors.New("onnx: malformed model")

// MaxTensorElements bounds the element count of one initializer accepted by Unmarshal.
const MaxTensorElements = 1 << 28

// field is one decoded protobuf field: its number, wire type, and either its varint/fixed value
// or its length-delimited bytes.
type field struct {
	num   protowire.Number
	typ   protowire.Type
	v     uint64
	bytes []byte
}

// fields walks the fields of one message, calling fn for each.
func fields(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrMalformed, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func wantType(f field, t protowire.Type, what string) error {
	if f.typ != t {
		return fmt.Errorf("%w: %s has wire type %d, want %d", ErrMalformed, what, f.typ, t)
	}
	return nil
}

// Unmarshal decodes an ONNX ModelProto. Fields outside the supported subset are skipped;
// the result is checked with Model.Validate.
func Unmarshal(b []byte) (*Model, error) {
	m := &Model{}
	sawGraph := false
	err := fields(b, func(f field) error {
		switch f.num {
		case modelIRVersion:
			if err := wantType(f, protowire.VarintType, "ir_version"); err != nil {
				return err
			}
			m.IRVersion = int64(f.v)
		case modelProducerName:
			m.ProducerName = string(f.bytes)
		case modelProducerVer:
			m.ProducerVer = string(f.bytes)
		case modelDocString:
			m.DocString = string(f.bytes)
		case modelGraph:
			if err := wantType(f, protowire.BytesType, "graph"); err != nil {
				return err
			}
			sawGraph = true
			return readGraph(f.bytes, &m.Graph)
		case modelOpsetImport:
			if err := wantType(f, protowire.BytesType, "opset_import"); err != nil {
				return err
			}
			var domain string
			var version int64
			err := fields(f.bytes, func(f field) error {
				switch f.num {
				case opsetDomain:
					domain = string(f.bytes)
				case opsetVersion:
					version = int64(f.v)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if domain == "" || domain == "ai.onnx" {
				m.OpsetVersion = version
			}
		case modelMetadataProps:
			if err := wantType(f, protowire.BytesType, "metadata_props"); err != nil {
				return err
			}
			var k, v string
			err := fields(f.bytes, func(f field) error {
				switch f.num {
				case entryKey:
					k = string(f.bytes)
				case entryValue:
					v = string(f.bytes)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if m.Metadata == nil {
				m.Metadata = map[string]string{}
			}
			m.Metadata[k] = v
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !sawGraph {
		return nil, fmt.Errorf("%w: no graph", ErrMalformed)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return m, nil
}

func readGraph(b []byte, g *Graph) error {
	return fields(b, func(f field) error {
		switch f.num {
		case graphNode:
			if err := wantType(f, protowire.BytesType, "node"); err != nil {
				return err
			}
			n, err := readNode(f.bytes)
			if err != nil {
				return err
			}
			g.Nodes = append(g.Nodes, n)
		case graphName:
			g.Name = string(f.bytes)
		case graphInitializer:
			if err := wantType(f, protowire.BytesType, "initializer"); err != nil {
				return err
			}
			t, err := readTensor(f.bytes)
			if err != nil {
				return err
			}
			g.Initializers = append(g.Initializers, t)
		case graphInput, graphOutput:
			if err := wantType(f, protowire.BytesType, "input/output"); err != nil {
				return err
			}
			v, err := readValueInfo(f.bytes)
			if err != nil {
				return err
			}
			if f.num == graphInput {
				g.Inputs = append(g.Inputs, v)
			} else {
				g.Outputs = append(g.Outputs, v)
			}
		}
		return nil
	})
}

func readNode(b []byte) (Node, error) {
	var n Node
	err := fields(b, func(f field) error {
		switch f.num {
		case nodeInput:
			n.Inputs = append(n.Inputs, string(f.bytes))
		case nodeOutput:
			n.Outputs = append(n.Outputs, string(f.bytes))
		case nodeName:
			n.Name = string(f.bytes)
		case nodeOpType:
			n.OpType = string(f.bytes)
		case nodeDomain:
			n.Domain = string(f.bytes)
		case nodeAttribute:
			if err := wantType(f, protowire.BytesType, "attribute"); err != nil {
				return err
			}
			a, err := readAttr(f.bytes)
			if err != nil {
				return err
			}
			n.Attributes = append(n.Attributes, a)
		}
		return nil
	})
	return n, err
}

func readAttr(b []byte) (Attribute, error) {
	var a Attribute
	err := fields(b, func(f field) error {
		switch f.num {
		case attrName:
			a.Name = string(f.bytes)
		case attrType:
			a.Type = AttrType(f.v)
		case attrF:
			if err := wantType(f, protowire.Fixed32Type, "attribute f"); err != nil {
				return err
			}
			a.F = math.Float32frombits(uint32(f.v))
		case attrI:
			a.I = int64(f.v)
		case attrS:
			a.S = string(f.bytes)
		case attrFloats:
			vs, err := readFloats(f)
			if err != nil {
				return err
			}
			a.Floats = append(a.Floats, vs...)
		case attrInts:
			vs, err := readInts(f)
			if err != nil {
				return err
			}
			a.Ints = append(a.Ints, vs...)
		}
		return nil
	})
	return a, err
}

// readFloats decodes a repeated float field, packed or not.
func readFloats(f field) ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return []float32{math.Float32frombits(uint32(f.v))}, nil
	case protowire.BytesType:
		if len(f.bytes)%4 != 0 {
			return nil, fmt.Errorf("%w: packed floats of %d bytes", ErrMalformed, len(f.bytes))
		}
		out := make([]float32, len(f.bytes)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(f.bytes[4*i:]))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: float list has wire type %d", ErrMalformed, f.typ)
}

// readInts decodes a repeated int64 field, packed or not.
func readInts(f field) ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return []int64{int64(f.v)}, nil
	case protowire.BytesType:
		var out []int64
		b := f.bytes
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("%w: packed ints: %v", ErrMalformed, protowire.ParseError(n))
			}
			out = append(out, int64(v))
			b = b[n:]
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: int list has wire type %d", ErrMalformed, f.typ)
}

func readTensor(b []byte) (Tensor, error) {
	var t Tensor
	var raw []byte
	hasRaw := false
	err := fields(b, func(f field) error {
		switch f.num {
		case tensorDims:
			vs, err := readInts(f)
			if err != nil {
				return err
			}
			t.Dims = append(t.Dims, vs...)
		case tensorDataType:
			t.DataType = DataType(f.v)
		case tensorName:
			t.Name = string(f.bytes)
		case tensorFloatData:
			vs, err := readFloats(f)
			if err != nil {
				return err
			}
			t.FloatData = append(t.FloatData, vs...)
		case tensorInt64Data:
			vs, err := readInts(f)
			if err != nil {
				return err
			}
			t.Int64Data = append(t.Int64Data, vs...)
		case tensorRawData:
			raw, hasRaw = f.bytes, true
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	n, err := NumElements(t.Dims, MaxTensorElements)
	if err != nil {
		return t, fmt.Errorf("%w: initializer %q: %v", ErrMalformed, t.Name, err)
	}
	if !hasRaw {
		return t, nil
	}
	switch t.DataType {
	case Float:
		if int64(len(raw)) != 4*n {
			return t, fmt.Errorf("%w: initializer %q: %d raw bytes for %d floats", ErrMalformed, t.Name, len(raw), n)
		}
		t.FloatData = make([]float32, n)
		for i := range t.FloatData {
			t.FloatData[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case Int64:
		if int64(len(raw)) != 8*n {
			return t, fmt.Errorf("%w: initializer %q: %d raw bytes for %d int64s", ErrMalformed, t.Name, len(raw), n)
		}
		t.Int64Data = make([]int64, n)
		for i := range t.Int64Data {
			t.Int64Data[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	default:
		return t, fmt.Errorf("%w: initializer %q: unsupported data type %v", ErrMalformed, t.Name, t.DataType)
	}
	return t, nil
}

func readValueInfo(b []byte) (ValueInfo, error) {
	var v ValueInfo
	err := fields(b, func(f field) error {
		switch f.num {
		case valueName:
			v.Name = string(f.bytes)
		case valueType:
			return fields(f.bytes, func(f field) error {
				if f.num != typeTensor {
					return nil
				}
				return fields(f.bytes, func(f field) error {
					switch f.num {
					case tensorElemType:
						v.ElemType = DataType(f.v)
					case tensorShape:
						return fields(f.bytes, func(f field) error {
							if f.num != shapeDim {
								return nil
							}
							var d Dim
							err := fields(f.bytes, func(f field) error {
								switch f.num {
								case dimValue:
									d.Value = int64(f.v)
								case dimParam:
									d.Param = string(f.bytes)
								}
								return nil
							})
							v.Shape = append(v.Shape, d)
							return err
						})
					}
					return nil
				})
			})
		}
		return nil
	})
	return v, err
}
