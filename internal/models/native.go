package models

import (
	"context"
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/models/onnx"
)

// value is a tensor flowing through the native interpreter: float32 data, or int64 data for
// shape tensors (Reshape's second input).
type value struct {
	shape []int64
	f     []float32
	i     []int64
}

func (v *value) numel() int {
	n := 1
	for _, d := range v.shape {
		n *= int(d)
	}
	return n
}

// kernel computes one node's output from its inputs (nil for an omitted optional input).
type kernel func(in []*value) (*value, error)

// step is one compiled node: its kernel and the value slots it reads and writes.
type step struct {
	name, op string
	in       []int // slot per input; -1 for an omitted optional input
	out      int
	run      kernel
}

// native is the pure-Go interpreter: a compiled list of steps over a slot array whose first
// slots hold the initializers. It keeps no per-Run state, so Run is safe for concurrent use.
type native struct {
	meta    Metadata
	steps   []step
	consts  []*value // slot → constant (initializer) or nil
	inputs  []int    // slot of each model input
	outputs []int    // slot of each model output
}

var _ Runner = (*native)(nil)
var _ OperatorProfiler = (*native)(nil)

// NodeTime is the wall time one node took in one profiled Run.
type NodeTime struct {
	Node   string        `json:"node"`
	OpType string        `json:"op_type"`
	Time   time.Duration `json:"time_ns"`
}

// OperatorProfiler is implemented by runners that can time each operator node of one Run
// (the native runtime); INFless's combined operator profiling (§3.3) consumes it.
type OperatorProfiler interface {
	// RunProfiled is Run that also returns the time spent in each node, in execution order.
	RunProfiled(ctx context.Context, inputs []Tensor) ([]Tensor, []NodeTime, error)
}

// NativeOps lists the operators the native runtime implements.
var NativeOps = []string{"Add", "AveragePool", "Conv", "Cos", "Flatten", "Gemm", "Identity", "MatMul", "Mul", "Relu", "Reshape", "Sigmoid", "Softmax", "Sub", "Tanh"}

func newNative(m *onnx.Model, meta Metadata) (*native, error) {
	g := &m.Graph
	slots := map[string]int{}
	n := &native{meta: meta}
	slot := func(name string) int {
		if s, ok := slots[name]; ok {
			return s
		}
		slots[name] = len(n.consts)
		n.consts = append(n.consts, nil)
		return slots[name]
	}
	for i := range g.Initializers {
		t := &g.Initializers[i]
		v := &value{shape: append([]int64(nil), t.Dims...), f: t.FloatData, i: t.Int64Data}
		n.consts[slot(t.Name)] = v
	}
	for _, in := range meta.Inputs {
		n.inputs = append(n.inputs, slot(in.Name))
	}
	for _, nd := range g.Nodes {
		if nd.Domain != "" && nd.Domain != "ai.onnx" {
			return nil, fmt.Errorf("%w: node %q: domain %q", ErrUnsupported, nd.Name, nd.Domain)
		}
		if len(nd.Outputs) != 1 {
			return nil, fmt.Errorf("%w: node %q (%s) has %d outputs, the native runtime supports 1", ErrUnsupported, nd.Name, nd.OpType, len(nd.Outputs))
		}
		st := step{name: nd.Name, op: nd.OpType}
		var consts []*value
		for _, in := range nd.Inputs {
			if in == "" {
				st.in = append(st.in, -1)
				consts = append(consts, nil)
				continue
			}
			s := slot(in)
			st.in = append(st.in, s)
			consts = append(consts, n.consts[s])
		}
		k, err := compileNode(nd, consts)
		if err != nil {
			return nil, err
		}
		st.run = k
		st.out = slot(nd.Outputs[0])
		n.steps = append(n.steps, st)
	}
	for _, out := range meta.Outputs {
		n.outputs = append(n.outputs, slot(out.Name))
	}
	return n, nil
}

// Run implements Runner.
func (n *native) Run(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	out, _, err := n.run(ctx, inputs, false)
	return out, err
}

// RunProfiled implements OperatorProfiler.
func (n *native) RunProfiled(ctx context.Context, inputs []Tensor) ([]Tensor, []NodeTime, error) {
	return n.run(ctx, inputs, true)
}

func (n *native) run(ctx context.Context, inputs []Tensor, profile bool) ([]Tensor, []NodeTime, error) {
	if _, err := n.meta.CheckInputs(inputs); err != nil {
		return nil, nil, err
	}
	vals := make([]*value, len(n.consts))
	copy(vals, n.consts)
	for i, in := range inputs {
		vals[n.inputs[i]] = &value{shape: in.Shape, f: in.Data}
	}
	var times []NodeTime
	if profile {
		times = make([]NodeTime, 0, len(n.steps))
	}
	args := make([]*value, 0, 4)
	for _, st := range n.steps {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		args = args[:0]
		for _, s := range st.in {
			if s < 0 {
				args = append(args, nil)
				continue
			}
			if vals[s] == nil {
				return nil, nil, fmt.Errorf("run %s: node %q reads a value no node produced", n.meta.Name, st.name)
			}
			args = append(args, vals[s])
		}
		var start time.Time
		if profile {
			start = time.Now()
		}
		v, err := st.run(args)
		if err != nil {
			return nil, nil, fmt.Errorf("run %s: node %q (%s): %w", n.meta.Name, st.name, st.op, err)
		}
		if profile {
			times = append(times, NodeTime{Node: st.name, OpType: st.op, Time: time.Since(start)})
		}
		vals[st.out] = v
	}
	outs := make([]Tensor, len(n.outputs))
	for i, s := range n.outputs {
		v := vals[s]
		if v == nil || v.f == nil {
			return nil, nil, fmt.Errorf("run %s: output %q was not computed as float", n.meta.Name, n.meta.Outputs[i].Name)
		}
		outs[i] = Tensor{Name: n.meta.Outputs[i].Name, Shape: append([]int64(nil), v.shape...), Data: v.f}
	}
	return outs, times, nil
}

// Close implements Runner; the native runtime holds no resources.
func (n *native) Close() error { return nil }
