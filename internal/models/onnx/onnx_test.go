package onnx

import (
	"errors"
	"reflect"
	"testing"
)

// tinyModel is a 3→2 Gemm + Relu + Softmax graph with a dynamic batch dimension.
func tinyModel() *Model {
	return &Model{
		ProducerName: "sloserve-test",
		Metadata:     map[string]string{"k": "v"},
		Graph: Graph{
			Name: "tiny",
			Nodes: []Node{
				{Name: "fc", OpType: "Gemm", Inputs: []string{"x", "w", "b"}, Outputs: []string{"h"},
					Attributes: []Attribute{IntAttr("transB", 0), FloatAttr("alpha", 1)}},
				{Name: "relu", OpType: "Relu", Inputs: []string{"h"}, Outputs: []string{"r"}},
				{Name: "sm", OpType: "Softmax", Inputs: []string{"r"}, Outputs: []string{"y"},
					Attributes: []Attribute{IntAttr("axis", -1)}},
				{Name: "shape", OpType: "Reshape", Inputs: []string{"y", "s"}, Outputs: []string{"z"},
					Attributes: []Attribute{IntsAttr("perm", 1, 0)}},
			},
			Initializers: []Tensor{
				FloatTensor("w", []int64{3, 2}, []float32{1, -2, 3.5, 4, 5, 6}),
				FloatTensor("b", []int64{2}, []float32{0.25, -0.5}),
				Int64Tensor("s", []int64{2}, []int64{-1, 2}),
			},
			Inputs:  []ValueInfo{{Name: "x", ElemType: Float, Shape: []Dim{{Param: "N"}, {Value: 3}}}},
			Outputs: []ValueInfo{{Name: "z", ElemType: Float, Shape: []Dim{{Param: "N"}, {Value: 2}}}},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	want := tinyModel()
	got, err := Unmarshal(Marshal(want))
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	want.IRVersion, want.OpsetVersion = IRVersion, OpsetVersion
	// Marshal omits zero-valued attributes' payload but keeps their type; compare field by field.
	if !reflect.DeepEqual(want, got) {
		t.Errorf("round trip mismatch (-want +got):\n-%+v\n+%+v", want, got)
	}
	if got, want := got.Graph.Inputs[0].Dims(), []int64{-1, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("Dims() (-want +got): -%v +%v", want, got)
	}
	if got, want := got.Graph.Params(), int64(8); got != want {
		t.Errorf("Params() (-want +got): -%d +%d", want, got)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	valid := Marshal(tinyModel())
	badOrder := tinyModel()
	badOrder.Graph.Nodes[0], badOrder.Graph.Nodes[1] = badOrder.Graph.Nodes[1], badOrder.Graph.Nodes[0]
	badDims := tinyModel()
	badDims.Graph.Initializers[0].Dims = []int64{4, 2}
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"truncated", valid[:len(valid)/2]},
		{"garbage", []byte{0xff, 0xff, 0xff}},
		{"not topological", Marshal(badOrder)},
		{"raw data shorter than dims", Marshal(badDims)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Unmarshal(tc.in)
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("Unmarshal error = %v, want ErrMalformed", err)
			}
		})
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(Marshal(tinyModel()))
	f.Add([]byte{})
	f.Add([]byte{0x3a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Unmarshal(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		// A model that decodes re-encodes to bytes that decode to the same model.
		m2, err := Unmarshal(Marshal(m))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if len(m2.Graph.Nodes) != len(m.Graph.Nodes) || len(m2.Graph.Initializers) != len(m.Graph.Initializers) {
			t.Fatalf("re-decode changed the graph: %d/%d nodes, %d/%d initializers",
				len(m.Graph.Nodes), len(m2.Graph.Nodes), len(m.Graph.Initializers), len(m2.Graph.Initializers))
		}
	})
}

func TestPredecessors(t *testing.T) {
	g := tinyModel().Graph
	got := g.Predecessors()
	want := [][]int{nil, {0}, {1}, {2}}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("Predecessors (-want +got): -%v +%v", want, got)
	}
}
