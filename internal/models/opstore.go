package models

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/sloserve/sloserve/internal/models/onnx"
	"github.com/sloserve/sloserve/internal/profile"
)

// Operator store measurement (`sloserve profile --operators --store FILE`, INFless §3.3's
// combined operator profiling on this machine). Each distinct operator of the given models —
// type, weights and input shape — is rebuilt as a one-node ONNX graph with its real weights and
// timed with ONNX Runtime at every thread count and batch size; its cost is that time less the
// time of an Identity graph on the same input (the per-call overhead: tensor creation, dispatch,
// output copy), which is stored too. One-node graphs rather than ONNX Runtime's own profiler:
// the profiler reports integer microseconds (most of these operators take a few), adds its own
// per-node overhead to the run, and names the nodes of the graph it rewrote (fused Gemm+Relu,
// NCHWc reorders), which a model never measured cannot be mapped onto.

// OpStoreOptions configures MeasureOperatorStore.
type OpStoreOptions struct {
	// Threads are the intra-op thread counts and Batches the batch sizes to measure at.
	Threads, Batches []int
	// MinRuns, MaxRuns and MinTime bound each timing as in ProfileOptions.
	MinRuns, MaxRuns int
	MinTime          time.Duration
	// ORTLibrary is libonnxruntime.so ("" for the default).
	ORTLibrary string
	// Rounds is how many times every graph is timed (each keeps its fastest round); ≥ 1.
	Rounds int
	// Whole also times every model as a whole (the store's Models[].Measured, for leave-one-out).
	Whole bool
	// Progress, when set, is told each step.
	Progress func(format string, args ...any)
}

// OpStoreModel is one model to take operators from.
type OpStoreModel struct {
	Name string
	ONNX []byte
}

// MeasureOperatorStore measures the operator store of ms (see above). It is a measurement: it
// reads the wall clock and runs ONNX Runtime many times.
func MeasureOperatorStore(ctx context.Context, ms []OpStoreModel, o OpStoreOptions) (*profile.COPStore, error) {
	if len(o.Threads) == 0 || len(o.Batches) == 0 || o.MinRuns < 1 || o.MaxRuns < o.MinRuns {
		return nil, fmt.Errorf("operator store: threads %v, batches %v, runs %d..%d: need threads, batches and 1 ≤ min ≤ max runs", o.Threads, o.Batches, o.MinRuns, o.MaxRuns)
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	st := &profile.COPStore{Runtime: RuntimeONNXRuntime, Note: "one-node ONNX graphs timed with ONNX Runtime (wall clock, medians); cost = node graph − Identity graph on its input"}
	type opGraph struct {
		node    profile.COPNode
		model   []byte
		in, out []int64 // per-sample dims of its first runtime input and its output
	}
	var ops []opGraph
	seen := map[string]bool{}
	for _, m := range ms {
		cm, graphs, err := copModel(m)
		if err != nil {
			return nil, err
		}
		st.Models = append(st.Models, cm)
		for i, n := range cm.Nodes {
			if !seen[n.Sig()] {
				seen[n.Sig()] = true
				ops = append(ops, opGraph{n, graphs[i].model, graphs[i].in, graphs[i].out})
			}
		}
	}
	ident := map[string][]byte{}
	var identKeys []string
	for _, op := range ops {
		for _, dims := range [][]int64{op.in, op.out} {
			k := profile.PerSample(append([]int64{1}, dims...))
			if _, ok := ident[k]; !ok {
				ident[k] = identityGraph(dims)
				identKeys = append(identKeys, k)
			}
		}
	}
	// Every graph of a thread count is timed once per round, the rounds one after the other, and
	// each keeps its fastest round: a burst of load from other processes spoils a round, not the
	// store.
	graphs := make([][]byte, 0, len(identKeys)+len(ops)+len(ms))
	for _, k := range identKeys {
		graphs = append(graphs, ident[k])
	}
	for _, op := range ops {
		graphs = append(graphs, op.model)
	}
	if o.Whole {
		for _, m := range ms {
			graphs = append(graphs, m.ONNX)
		}
	}
	for _, c := range o.Threads {
		o.Progress("operators: %d threads: %d graphs × batches %v × %d rounds", c, len(graphs), o.Batches, o.rounds())
		best, err := timeGraphs(ctx, graphs, c, o)
		if err != nil {
			return nil, fmt.Errorf("operator store: %d threads: %w", c, err)
		}
		for bi, b := range o.Batches {
			t := func(i int) float64 { return best[i][bi] }
			base := map[string]float64{}
			for i, k := range identKeys {
				base[k] = t(i)
				st.Overhead = append(st.Overhead, profile.COPOverhead{In: k, Batch: b, Threads: c, NS: t(i)})
			}
			for i, op := range ops {
				ov := (base[op.node.In] + base[op.node.Out]) / 2
				st.Ops = append(st.Ops, profile.COPOp{COPNode: op.node, Batch: b, Threads: c, CostNS: t(len(identKeys)+i) - ov})
			}
			if o.Whole {
				for i := range ms {
					st.Models[i].Measured = append(st.Models[i].Measured, profile.COPPoint{Batch: b, Threads: c, NS: t(len(identKeys) + len(ops) + i)})
				}
			}
		}
	}
	return st, st.Validate()
}

// nodeGraph is one node rebuilt as a one-node model, and its first runtime input's and its
// output's per-sample dims.
type nodeGraph struct {
	model   []byte
	in, out []int64
}

// copModel returns m's COP task graph and each node as a one-node model.
func copModel(m OpStoreModel) (profile.COPModel, []nodeGraph, error) {
	om, err := onnx.Unmarshal(m.ONNX)
	if err != nil {
		return profile.COPModel{}, nil, fmt.Errorf("operator store: %s: %w", m.Name, err)
	}
	shapes, err := InferShapes(m.ONNX)
	if err != nil {
		return profile.COPModel{}, nil, fmt.Errorf("operator store: %s: %w", m.Name, err)
	}
	in, out := make([][][]int64, len(shapes)), make([][]int64, len(shapes))
	for i, s := range shapes {
		in[i], out[i] = s.In, s.Out
	}
	nodes, err := profile.COPNodes(&om.Graph, in, out)
	if err != nil {
		return profile.COPModel{}, nil, fmt.Errorf("operator store: %s: %w", m.Name, err)
	}
	cm := profile.COPModel{Model: m.Name, Nodes: nodes}
	if len(om.Graph.Inputs) > 0 && len(om.Graph.Outputs) > 0 {
		cm.In, cm.Out = profile.PerSample(om.Graph.Inputs[0].Dims()), profile.PerSample(om.Graph.Outputs[0].Dims())
	}
	graphs := make([]nodeGraph, len(shapes))
	for i, nd := range om.Graph.Nodes {
		g := onnx.Graph{Name: nd.Name, Nodes: []onnx.Node{nd}}
		for k, name := range nd.Inputs {
			if t, ok := om.Graph.Initializer(name); ok {
				g.Initializers = append(g.Initializers, *t)
				continue
			}
			if sh := shapes[i].In[k]; sh != nil {
				g.Inputs = append(g.Inputs, batchValue(name, sh[1:]))
				if graphs[i].in == nil {
					graphs[i].in = sh[1:]
				}
			}
		}
		g.Outputs = []onnx.ValueInfo{batchValue(nd.Outputs[0], shapes[i].Out[1:])}
		graphs[i].out = shapes[i].Out[1:]
		graphs[i].model = onnx.Marshal(&onnx.Model{IRVersion: onnx.IRVersion, OpsetVersion: om.OpsetVersion, Graph: g})
	}
	return cm, graphs, nil
}

// batchValue is a FLOAT value of shape [N, dims...].
func batchValue(name string, dims []int64) onnx.ValueInfo {
	v := onnx.ValueInfo{Name: name, ElemType: onnx.Float, Shape: []onnx.Dim{{Param: "N"}}}
	for _, d := range dims {
		v.Shape = append(v.Shape, onnx.Dim{Value: d})
	}
	return v
}

// identityGraph copies an input of shape [N, dims...]: the per-call overhead.
func identityGraph(dims []int64) []byte {
	g := onnx.Graph{Name: "identity", Nodes: []onnx.Node{{Name: "id", OpType: "Identity", Inputs: []string{"x"}, Outputs: []string{"y"}}},
		Inputs: []onnx.ValueInfo{batchValue("x", dims)}, Outputs: []onnx.ValueInfo{batchValue("y", dims)}}
	return onnx.Marshal(&onnx.Model{IRVersion: onnx.IRVersion, OpsetVersion: onnx.OpsetVersion, Graph: g})
}

func (o OpStoreOptions) rounds() int { return max(o.Rounds, 1) }

// timeGraphs times every graph at every batch size of o on c intra-op threads, o.Rounds times
// over, and returns each one's fastest round (best[graph][batch index], nanoseconds): a round's
// time is the median of its runs, on the calling thread's CPU clock with one thread (what the
// run costs a dedicated core, whoever else is using the machine), else the lower quartile of the
// wall times. Inputs are pseudo-random in [0, 1).
func timeGraphs(ctx context.Context, graphs [][]byte, c int, o OpStoreOptions) ([][]float64, error) {
	runners := make([]Runner, len(graphs))
	metas := make([]Metadata, len(graphs))
	defer func() {
		for _, r := range runners {
			if r != nil {
				r.Close()
			}
		}
	}()
	for i, g := range graphs {
		r, meta, err := Open(g, Options{Runtime: RuntimeONNXRuntime, ORTLibrary: o.ORTLibrary, IntraOpThreads: c})
		if err != nil {
			return nil, err
		}
		runners[i], metas[i] = r, meta
	}
	cpu := c == 1
	if _, ok := threadCPUTime(); !ok {
		cpu = false
	}
	now := func() int64 { return time.Now().UnixNano() }
	if cpu {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		now = func() int64 { d, _ := threadCPUTime(); return int64(d) }
	}
	best := make([][]float64, len(graphs))
	for i := range best {
		best[i] = make([]float64, len(o.Batches))
	}
	for round := 0; round < o.rounds(); round++ {
		for bi, b := range o.Batches {
			for i, r := range runners {
				t, err := timeRuns(ctx, r, inputsFor(metas[i], b, c), now, cpu, o)
				if err != nil {
					return nil, fmt.Errorf("%s batch %d: %w", metas[i].Name, b, err)
				}
				if round == 0 || t < best[i][bi] {
					best[i][bi] = t
				}
			}
		}
	}
	return best, nil
}

// inputsFor returns pseudo-random inputs of meta at batch b.
func inputsFor(meta Metadata, b, c int) []Tensor {
	rng := rand.New(rand.NewPCG(uint64(b), uint64(c)))
	var ins []Tensor
	for _, in := range meta.Inputs {
		shape := append([]int64{int64(b)}, in.Shape[1:]...)
		data := make([]float32, elemsOf(shape))
		for i := range data {
			data[i] = rng.Float32()
		}
		ins = append(ins, Tensor{Name: in.Name, Shape: shape, Data: data})
	}
	return ins
}

// timeRuns runs r after 2 warm-up runs until MinRuns and MinTime/Rounds are reached (or MaxRuns)
// and returns the median (median true) or the lower quartile of the times.
func timeRuns(ctx context.Context, r Runner, ins []Tensor, now func() int64, median bool, o OpStoreOptions) (float64, error) {
	for i := 0; i < 2; i++ {
		if _, err := r.Run(ctx, ins); err != nil {
			return 0, err
		}
	}
	var times []float64
	var total int64
	for len(times) < o.MinRuns || (total < int64(o.MinTime)/int64(o.rounds()) && len(times) < o.MaxRuns) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		start := now()
		if _, err := r.Run(ctx, ins); err != nil {
			return 0, err
		}
		d := max(now()-start, 1)
		total += d
		times = append(times, float64(d))
	}
	slices.Sort(times)
	if median {
		return times[len(times)/2], nil
	}
	return times[len(times)/4], nil
}

func elemsOf(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}
