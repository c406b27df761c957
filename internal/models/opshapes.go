package models

import (
	"fmt"
)

// NodeShapes is the shape of every runtime value one node reads and the shape it writes, in
// execution order, for a batch of one: what combined operator profiling (INFless §3.3) needs to
// rebuild the node as a one-node graph and to count its work.
type NodeShapes struct {
	// Node and OpType name the node.
	Node, OpType string
	// In are the shapes of its inputs (nil for a constant or omitted one), Out its output's.
	In  [][]int64
	Out []int64
}

// InferShapes runs model once with the native runtime on zeros at batch 1 and returns each
// node's input and output shapes. It is a shape inference by execution, not a measurement.
func InferShapes(model []byte) ([]NodeShapes, error) {
	r, meta, err := Open(model, Options{})
	if err != nil {
		return nil, fmt.Errorf("infer shapes: %w", err)
	}
	n := r.(*native)
	var ins []Tensor
	for _, in := range meta.Inputs {
		shape := append([]int64(nil), in.Shape...)
		size := int64(1)
		for i, d := range shape {
			if d <= 0 {
				shape[i] = 1
			}
			size *= shape[i]
		}
		ins = append(ins, Tensor{Name: in.Name, Shape: shape, Data: make([]float32, size)})
	}
	vals := make([]*value, len(n.consts))
	copy(vals, n.consts)
	for i, in := range ins {
		vals[n.inputs[i]] = &value{shape: in.Shape, f: in.Data}
	}
	out := make([]NodeShapes, 0, len(n.steps))
	for _, st := range n.steps {
		ns := NodeShapes{Node: st.name, OpType: st.op}
		args := make([]*value, len(st.in))
		for k, s := range st.in {
			var sh []int64
			if s >= 0 {
				args[k] = vals[s]
				if n.consts[s] == nil && vals[s] != nil {
					sh = append([]int64(nil), vals[s].shape...)
				}
			}
			ns.In = append(ns.In, sh)
		}
		v, err := st.run(args)
		if err != nil {
			return nil, fmt.Errorf("infer shapes: node %q (%s): %w", st.name, st.op, err)
		}
		vals[st.out] = v
		ns.Out = append([]int64(nil), v.shape...)
		out = append(out, ns)
	}
	return out, nil
}
