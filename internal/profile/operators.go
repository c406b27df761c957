package profile

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/models/onnx"
)

// Combined operator profiling (INFless §3.3). An operator's profile is the 5-tuple
// ⟨p_i, b_i, c_i, g_i, t_i⟩: input size, batch size, CPU and GPU resources, and execution time.
// Profiles are stored once per distinct operator and shared across models ("inference functions
// share a common set of operators"); a model's batch latency is then predicted from its task graph
// G = (O, E): a sequence chain takes the sum of its operators' times, parallel branches the
// maximum of theirs — on any DAG, the longest (critical) path with node weights t_i — plus a 10 %
// offset against prediction error.

// DefaultOperatorOffset is INFless §3.3's +10 % prediction offset.
const DefaultOperatorOffset = 0.10

// OpKey identifies one operator profile: the operator type, its input-size signature p_i, the
// batch size b_i and the resources c_i (CPU threads) and g_i (GPU SM percent).
type OpKey struct {
	// Op is the ONNX operator type (e.g. "Gemm").
	Op string
	// Size is the per-sample input-size signature: the dimensions of the operator's constant
	// inputs (weights), e.g. "784x256;256" — two operators with the same type and weights shape do
	// the same work per sample.
	Size  string
	Batch int
	CPU   int
	GPU   int
}

// OperatorStore is an operator profile database: the median execution time per OpKey. Adding a
// key again keeps every sample and answers with their median.
type OperatorStore struct {
	m map[OpKey][]time.Duration
}

// NewOperatorStore returns an empty store.
func NewOperatorStore() *OperatorStore { return &OperatorStore{m: map[OpKey][]time.Duration{}} }

// Add records one measured time of operator k.
func (s *OperatorStore) Add(k OpKey, t time.Duration) {
	s.m[k] = append(s.m[k], t)
}

// Len returns the number of distinct operator profiles.
func (s *OperatorStore) Len() int { return len(s.m) }

// Lookup returns the median time recorded for k.
func (s *OperatorStore) Lookup(k OpKey) (time.Duration, bool) {
	ts := s.m[k]
	if len(ts) == 0 {
		return 0, false
	}
	c := append([]time.Duration(nil), ts...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	if n := len(c); n%2 == 0 {
		return (c[n/2-1] + c[n/2]) / 2, true
	}
	return c[len(c)/2], true
}

// OpNode is one operator of a task graph.
type OpNode struct {
	// Name is the node's name (for messages).
	Name string
	// Op and Size are the node's OpKey type and input-size signature.
	Op, Size string
	// Preds are the indices of the nodes whose outputs it consumes (all smaller than its own).
	Preds []int
}

// OpGraph is a task graph G = (O, E) in topological order.
type OpGraph []OpNode

// Validate checks that every predecessor comes earlier in the order.
func (g OpGraph) Validate() error {
	for i, n := range g {
		for _, p := range n.Preds {
			if p < 0 || p >= i {
				return fmt.Errorf("op graph: node %d (%s) has predecessor %d: not in topological order", i, n.Name, p)
			}
		}
	}
	return nil
}

// OpGraphFromONNX builds the task graph of an ONNX graph (nodes are in topological order in a
// valid model): edges from onnx.Graph.Predecessors, sizes from the dimensions of each node's
// initializer inputs.
func OpGraphFromONNX(g *onnx.Graph) OpGraph {
	preds := g.Predecessors()
	out := make(OpGraph, len(g.Nodes))
	for i, n := range g.Nodes {
		var dims []string
		for _, in := range n.Inputs {
			if t, ok := g.Initializer(in); ok {
				ds := make([]string, len(t.Dims))
				for k, d := range t.Dims {
					ds[k] = strconv.FormatInt(d, 10)
				}
				dims = append(dims, strings.Join(ds, "x"))
			}
		}
		out[i] = OpNode{Name: n.Name, Op: n.OpType, Size: strings.Join(dims, ";"), Preds: preds[i]}
	}
	return out
}

// CriticalPath combines node times over g: a node finishes t(i) after the last of its
// predecessors, so a chain adds up and parallel branches take their maximum (INFless §3.3). It
// returns the latest finish, or an error naming the first node t has no time for.
func CriticalPath(g OpGraph, t func(i int) (time.Duration, bool)) (time.Duration, error) {
	if err := g.Validate(); err != nil {
		return 0, err
	}
	finish := make([]time.Duration, len(g))
	var end time.Duration
	for i, n := range g {
		ti, ok := t(i)
		if !ok {
			return 0, fmt.Errorf("op graph: no profile for node %d (%s %s)", i, n.Op, n.Size)
		}
		var start time.Duration
		for _, p := range n.Preds {
			start = max(start, finish[p])
		}
		finish[i] = start + ti
		end = max(end, finish[i])
	}
	return end, nil
}

// Combiner combines per-node times over a task graph: CriticalPath (INFless) or SerialSum.
type Combiner func(g OpGraph, t func(i int) (time.Duration, bool)) (time.Duration, error)

// SerialSum adds every node's time: the combination for a runtime that executes one node at a
// time (sloserve's native runtime, ONNX Runtime with one thread), where parallel branches do not
// overlap.
func SerialSum(g OpGraph, t func(i int) (time.Duration, bool)) (time.Duration, error) {
	if err := g.Validate(); err != nil {
		return 0, err
	}
	var sum time.Duration
	for i, n := range g {
		ti, ok := t(i)
		if !ok {
			return 0, fmt.Errorf("op graph: no profile for node %d (%s %s)", i, n.Op, n.Size)
		}
		sum += ti
	}
	return sum, nil
}

// Predict returns the predicted batch execution time of g at batch b on cpu threads and gpu SM
// percent, from the store's operator profiles combined by CriticalPath (INFless §3.3), inflated
// by offset (DefaultOperatorOffset).
func (s *OperatorStore) Predict(g OpGraph, b, cpu, gpu int, offset float64) (time.Duration, error) {
	return s.PredictWith(CriticalPath, g, b, cpu, gpu, offset)
}

// PredictWith is Predict with the given combiner.
func (s *OperatorStore) PredictWith(combine Combiner, g OpGraph, b, cpu, gpu int, offset float64) (time.Duration, error) {
	t, err := combine(g, func(i int) (time.Duration, bool) {
		return s.Lookup(OpKey{Op: g[i].Op, Size: g[i].Size, Batch: b, CPU: cpu, GPU: gpu})
	})
	if err != nil {
		return 0, err
	}
	return time.Duration(float64(t) * (1 + offset)), nil
}

// AddGraph records one profiled run's (or per-node medians') times of g: times[i] is node i's.
func (s *OperatorStore) AddGraph(g OpGraph, b, cpu, gpu int, times []time.Duration) error {
	if len(times) != len(g) {
		return fmt.Errorf("operator store: %d times for %d nodes", len(times), len(g))
	}
	for i, n := range g {
		s.Add(OpKey{Op: n.Op, Size: n.Size, Batch: b, CPU: cpu, GPU: gpu}, times[i])
	}
	return nil
}

// PredictionError compares a predicted with a measured whole-model batch time.
type PredictionError struct {
	Model     string        `json:"model"`
	Batch     int           `json:"batch"`
	Predicted time.Duration `json:"predicted_ns"`
	Measured  time.Duration `json:"measured_ns"`
	// Error is |P̂ − P| / P (INFless Fig. 8).
	Error float64 `json:"error"`
}

// ComparePredictions predicts g's batch time from s at every batch size of measured (whole-model
// medians by batch size, on cpu threads and gpu SM percent) with the given offset, and returns
// the errors in batch order. Use offset 0 to judge the combination itself (INFless Fig. 8 reports
// it before the offset); combine nil means CriticalPath.
func ComparePredictions(model string, g OpGraph, s *OperatorStore, measured map[int]time.Duration, cpu, gpu int, offset float64, combine Combiner) ([]PredictionError, error) {
	if combine == nil {
		combine = CriticalPath
	}
	bs := make([]int, 0, len(measured))
	for b := range measured {
		bs = append(bs, b)
	}
	sort.Ints(bs)
	out := make([]PredictionError, 0, len(bs))
	for _, b := range bs {
		p, err := s.PredictWith(combine, g, b, cpu, gpu, offset)
		if err != nil {
			return nil, fmt.Errorf("%s batch %d: %w", model, b, err)
		}
		m := measured[b]
		if m <= 0 {
			return nil, fmt.Errorf("%s batch %d: measured time %v must be > 0", model, b, m)
		}
		out = append(out, PredictionError{Model: model, Batch: b, Predicted: p, Measured: m, Error: math.Abs(float64(p-m)) / float64(m)})
	}
	return out, nil
}

// MeanError is the mean of the errors' Error.
func MeanError(es []PredictionError) float64 {
	if len(es) == 0 {
		return 0
	}
	var s float64
	for _, e := range es {
		s += e.Error
	}
	return s / float64(len(es))
}
