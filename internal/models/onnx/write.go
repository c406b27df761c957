package onnx

import (
	"encoding/binary"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx.proto (onnx/onnx.proto, IR version 8) used by Marshal and Unmarshal.
const (
	modelIRVersion     = 1
	modelProducerName  = 2
	modelProducerVer   = 3
	modelDocString     = 6
	modelGraph         = 7
	modelOpsetImport   = 8
	modelMetadataProps = 14

	opsetDomain  = 1
	opsetVersion = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5
	nodeDomain    = 7

	attrName   = 1
	attrF      = 2
	attrI      = 3
	attrS      = 4
	attrFloats = 7
	attrInts   = 8
	attrType   = 20

	tensorDims      = 1
	tensorDataType  = 2
	tensorFloatData = 4
	tensorInt64Data = 7
	tensorName      = 8
	tensorRawData   = 9

	valueName = 1
	valueType = 2

	typeTensor     = 1
	tensorElemType = 1
	tensorShape    = 2
	shapeDim       = 1
	dimValue       = 1
	dimParam       = 2
	entryKey       = 1
	entryValue     = 2
)

// Marshal encodes m as an ONNX ModelProto. Zero IRVersion/OpsetVersion become IRVersion and
// OpsetVersion. Initializers are written as little-endian raw_data, as exporters do.
func Marshal(m *Model) []byte {
	var b []byte
	ir := m.IRVersion
	if ir == 0 {
		ir = IRVersion
	}
	opset := m.OpsetVersion
	if opset == 0 {
		opset = OpsetVersion
	}
	b = appendVarintField(b, modelIRVersion, uint64(ir))
	b = appendStringField(b, modelProducerName, m.ProducerName)
	b = appendStringField(b, modelProducerVer, m.ProducerVer)
	b = appendStringField(b, modelDocString, m.DocString)
	b = appendMessage(b, modelGraph, appendGraph(nil, &m.Graph))
	var os []byte
	os = appendStringField(os, opsetDomain, "")
	os = appendVarintField(os, opsetVersion, uint64(opset))
	b = appendMessage(b, modelOpsetImport, os)
	keys := make([]string, 0, len(m.Metadata))
	for k := range m.Metadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var e []byte
		e = appendStringField(e, entryKey, k)
		e = appendStringField(e, entryValue, m.Metadata[k])
		b = appendMessage(b, modelMetadataProps, e)
	}
	return b
}

func appendGraph(b []byte, g *Graph) []byte {
	for i := range g.Nodes {
		b = appendMessage(b, graphNode, appendNode(nil, &g.Nodes[i]))
	}
	b = appendStringField(b, graphName, g.Name)
	for i := range g.Initializers {
		b = appendMessage(b, graphInitializer, appendTensor(nil, &g.Initializers[i]))
	}
	for _, v := range g.Inputs {
		b = appendMessage(b, graphInput, appendValueInfo(nil, v))
	}
	for _, v := range g.Outputs {
		b = appendMessage(b, graphOutput, appendValueInfo(nil, v))
	}
	return b
}

func appendNode(b []byte, n *Node) []byte {
	for _, s := range n.Inputs {
		b = protowire.AppendTag(b, nodeInput, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	for _, s := range n.Outputs {
		b = protowire.AppendTag(b, nodeOutput, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = appendStringField(b, nodeName, n.Name)
	b = appendStringField(b, nodeOpType, n.OpType)
	for _, a := range n.Attributes {
		b = appendMessage(b, nodeAttribute, appendAttr(nil, a))
	}
	b = appendStringField(b, nodeDomain, n.Domain)
	return b
}

func appendAttr(b []byte, a Attribute) []byte {
	b = appendStringField(b, attrName, a.Name)
	switch a.Type {
	case AttrFloat:
		b = protowire.AppendTag(b, attrF, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case AttrInt:
		b = protowire.AppendTag(b, attrI, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.I))
	case AttrString:
		b = protowire.AppendTag(b, attrS, protowire.BytesType)
		b = protowire.AppendString(b, a.S)
	case AttrFloats:
		var p []byte
		for _, f := range a.Floats {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, attrFloats, p)
	case AttrInts:
		var p []byte
		for _, v := range a.Ints {
			p = protowire.AppendVarint(p, uint64(v))
		}
		b = appendMessage(b, attrInts, p)
	}
	b = appendVarintField(b, attrType, uint64(a.Type))
	return b
}

func appendTensor(b []byte, t *Tensor) []byte {
	if len(t.Dims) > 0 {
		var p []byte
		for _, d := range t.Dims {
			p = protowire.AppendVarint(p, uint64(d))
		}
		b = appendMessage(b, tensorDims, p)
	}
	b = appendVarintField(b, tensorDataType, uint64(t.DataType))
	b = appendStringField(b, tensorName, t.Name)
	var raw []byte
	switch t.DataType {
	case Float:
		raw = make([]byte, 4*len(t.FloatData))
		for i, f := range t.FloatData {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
		}
	case Int64:
		raw = make([]byte, 8*len(t.Int64Data))
		for i, v := range t.Int64Data {
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
		}
	}
	b = protowire.AppendTag(b, tensorRawData, protowire.BytesType)
	b = protowire.AppendBytes(b, raw)
	return b
}

func appendValueInfo(b []byte, v ValueInfo) []byte {
	b = appendStringField(b, valueName, v.Name)
	var shape []byte
	for _, d := range v.Shape {
		var dm []byte
		if d.Param != "" {
			dm = appendStringField(dm, dimParam, d.Param)
		} else {
			dm = protowire.AppendTag(dm, dimValue, protowire.VarintType)
			dm = protowire.AppendVarint(dm, uint64(d.Value))
		}
		shape = appendMessage(shape, shapeDim, dm)
	}
	var tt []byte
	tt = appendVarintField(tt, tensorElemType, uint64(v.ElemType))
	tt = appendMessage(tt, tensorShape, shape)
	var typ []byte
	typ = appendMessage(typ, typeTensor, tt)
	b = appendMessage(b, valueType, typ)
	return b
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}
