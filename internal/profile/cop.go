package profile

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/models/onnx"
)

// COP is INFless's combined operator profiling (§3.3) as sloserve runs it on a CPU: a store of
// operator costs measured once on this machine, at several intra-op thread counts and batch
// sizes, from which the batch latency of any model — one never profiled as a whole — is
// predicted as a per-call overhead plus the sum of its operators' costs, each family's scaled by
// a factor κ and each node charged a dispatch cost ν, both fitted on the store's other models:
//
//	t̂(model, b, c) = overhead(in, b, c) + Σ_family κ_family · Σ_op cost(op, b, c) + ν · nodes
//
// An operator measured with the same type and shapes takes its measured cost; one never measured
// takes the cost of the measured operators of its type at the same ⟨b, c⟩ (the nearest batch size
// when b was not measured), interpolated linearly in work (FLOPs) between the two that bracket it,
// or the nearest one scaled by the work ratio outside their range — a convolution instead from a
// fit of its type's costs on elements read, elements written and FLOPs (convCost). The sum, not
// the critical path: ONNX Runtime with one inter-op thread runs one node at a time. The +10 %
// offset against prediction error is not part of the prediction: INFless's planner applies it
// (Options.Offset).

// COPNode is one operator of a model as COP sees it.
type COPNode struct {
	// Op is the ONNX operator type; Size the dimensions of its constant inputs (OpGraphFromONNX's
	// signature); In and Out the per-sample dimensions of its first runtime input and of its
	// output ("1x28x28", "784").
	Op   string `json:"op"`
	Size string `json:"size,omitempty"`
	In   string `json:"in"`
	Out  string `json:"out"`
	// Work is its per-sample work: FLOPs for Gemm, MatMul and pooling (2·outputs·K,
	// outputs·kernel), for Conv 2·outputs·K plus ConvOutputWork per output, TranscendentalFLOPs
	// per element for Cos, Exp, …, output elements for the others. Only ratios within one type
	// (or family) matter.
	Work float64 `json:"work"`
}

// Sig is the node's identity in the store: type, weights, input and output shapes.
func (n COPNode) Sig() string { return n.Op + "|" + n.Size + "|" + n.In + "|" + n.Out }

// COPOp is one measured operator cost: the time of a one-node graph of it less the per-call
// overhead, (I(in) + I(out)) / 2 with I(x) the time of an Identity graph on dims x — the call
// itself, creating the input tensor and copying the output back. Small operators come out
// slightly negative when the noise of the two measurements exceeds their work.
type COPOp struct {
	COPNode
	Batch   int     `json:"batch"`
	Threads int     `json:"threads"`
	CostNS  float64 `json:"cost_ns"`
}

// COPOverhead is I(In) at ⟨b, c⟩: the time of one Run of an Identity graph on per-sample
// dimensions In (the call, the input tensor's creation, the output's copy). A model's overhead
// is (I(its input) + I(its output)) / 2.
type COPOverhead struct {
	In      string  `json:"in"`
	Batch   int     `json:"batch"`
	Threads int     `json:"threads"`
	NS      float64 `json:"ns"`
}

// COPPoint is a whole model's measured median batch time at ⟨b, c⟩.
type COPPoint struct {
	Batch   int     `json:"batch"`
	Threads int     `json:"threads"`
	NS      float64 `json:"ns"`
}

// COPModel is a model's COP task graph and, for leave-one-out, its measured whole-model times.
type COPModel struct {
	Model string `json:"model"`
	// In and Out are the per-sample dimensions of the model's input and output (its overhead's keys).
	In       string     `json:"in"`
	Out      string     `json:"out"`
	Nodes    []COPNode  `json:"nodes"`
	Measured []COPPoint `json:"measured,omitempty"`
}

// COPStore is an operator store file (`sloserve profile --operators --store FILE`).
type COPStore struct {
	// Runtime, Machine and Note say where and how it was measured.
	Runtime  string        `json:"runtime"`
	Machine  string        `json:"machine,omitempty"`
	Note     string        `json:"note,omitempty"`
	Ops      []COPOp       `json:"ops"`
	Overhead []COPOverhead `json:"overhead"`
	Models   []COPModel    `json:"models,omitempty"`
}

// ReadCOPStore decodes and validates an operator store file.
func ReadCOPStore(r io.Reader) (*COPStore, error) {
	var s COPStore
	dec := json.NewDecoder(io.LimitReader(r, maxProfileBytes))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("read operator store: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate names the first bad entry.
func (s *COPStore) Validate() error {
	if len(s.Ops) == 0 || len(s.Overhead) == 0 {
		return fmt.Errorf("operator store: needs ops and overhead entries (have %d, %d)", len(s.Ops), len(s.Overhead))
	}
	const maxWork, maxBatch = 1e18, 1 << 20
	bad := func(b, c int, t float64) bool {
		return b < 1 || c < 1 || b > maxBatch || c > maxBatch || !(t >= 0 && t <= maxWork)
	}
	for i, o := range s.Ops {
		if o.Op == "" || bad(o.Batch, o.Threads, math.Abs(o.CostNS)) || !(o.Work >= 0 && o.Work <= maxWork) {
			return fmt.Errorf("operator store: ops[%d] %s: needs op, batch ≥ 1, threads ≥ 1, finite cost_ns, work ≥ 0", i, o.Sig())
		}
	}
	for i, o := range s.Overhead {
		if bad(o.Batch, o.Threads, o.NS) {
			return fmt.Errorf("operator store: overhead[%d]: needs batch ≥ 1, threads ≥ 1, ns ≥ 0", i)
		}
	}
	for _, m := range s.Models {
		for _, p := range m.Measured {
			if bad(p.Batch, p.Threads, p.NS) || p.NS == 0 {
				return fmt.Errorf("operator store: model %s: measured point %+v: needs batch, threads ≥ 1 and ns > 0", m.Model, p)
			}
		}
	}
	return nil
}

// Write encodes s as indented JSON.
func (s *COPStore) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(s)
}

// Threads returns the thread counts the store measured operators at, ascending.
func (s *COPStore) Threads() []int {
	var out []int
	for _, o := range s.Ops {
		if !slices.Contains(out, o.Threads) {
			out = append(out, o.Threads)
		}
	}
	slices.Sort(out)
	return out
}

// Model returns the store's task graph of the named model.
func (s *COPStore) Model(name string) (COPModel, bool) {
	for _, m := range s.Models {
		if m.Model == name {
			return m, true
		}
	}
	return COPModel{}, false
}

// Predict returns the predicted batch time of m at batch b on c threads, from the operator
// costs whose signature skip does not hold (nil: all; leave-one-out passes the model's own), each
// family's sum scaled by the factor and each node charged the dispatch cost fitted on the store's
// other models (factors).
func (s *COPStore) Predict(m COPModel, b, c int, skip map[string]bool) (time.Duration, error) {
	var bs []int
	for _, o := range s.Ops {
		if o.Threads == c && !slices.Contains(bs, o.Batch) {
			bs = append(bs, o.Batch)
		}
	}
	slices.Sort(bs)
	if len(bs) < 2 || slices.Contains(bs, b) {
		return s.predictAt(m, b, c, skip)
	}
	// A batch size never measured: linear in b between the predictions at the measured batch
	// sizes around it (beyond the largest, along the last two).
	i := min(max(sort.SearchInts(bs, b), 1), len(bs)-1)
	lo, err := s.predictAt(m, bs[i-1], c, skip)
	if err != nil {
		return 0, err
	}
	hi, err := s.predictAt(m, bs[i], c, skip)
	if err != nil {
		return 0, err
	}
	f := float64(b-bs[i-1]) / float64(bs[i]-bs[i-1])
	return time.Duration(float64(lo) + f*float64(hi-lo)), nil
}

// predictAt is Predict at a batch size b the store measured (or any b when it measured one).
func (s *COPStore) predictAt(m COPModel, b, c int, skip map[string]bool) (time.Duration, error) {
	p, err := s.parts(m, b, c, skip)
	if err != nil {
		return 0, err
	}
	k := s.factors(b, c, m.Model, skip)
	total := p.over
	for f := range p.fam {
		total += k[f] * p.fam[f]
	}
	return time.Duration(max(total, p.over)), nil
}

// nFactors is the number of terms factors fits: the three families' factors and the per-node cost.
const nFactors = 4

// nodeUnit scales copParts' node term (the node count) so that its factor, the cost of one node
// inside a model beyond its one-node graph's, is in units of 10 µs: of the order of the family
// factors, which keeps the ridge fit's pull on it mild.
const nodeUnit = 10e3

// copParts is a prediction's terms: the call overhead, the operator costs summed by family
// (famIndex), and the node count × nodeUnit.
type copParts struct {
	over float64
	fam  [nFactors]float64
}

// famIndex is the family of an operator type for factors: convolutions, matrix products, the rest.
func famIndex(op string) int {
	switch op {
	case "Conv":
		return 0
	case "Gemm", "MatMul":
		return 1
	}
	return 2
}

// parts computes m's overhead and per-family operator costs at ⟨b, c⟩.
func (s *COPStore) parts(m COPModel, b, c int, skip map[string]bool) (copParts, error) {
	if b < 1 || c < 1 {
		return copParts{}, fmt.Errorf("cop %s: batch %d and threads %d must be ≥ 1", m.Model, b, c)
	}
	oi, err := s.overhead(m.In, b, c)
	if err != nil {
		return copParts{}, fmt.Errorf("cop %s: %w", m.Model, err)
	}
	oo, err := s.overhead(m.Out, b, c)
	if err != nil {
		return copParts{}, fmt.Errorf("cop %s: %w", m.Model, err)
	}
	p := copParts{over: (oi + oo) / 2}
	for _, n := range m.Nodes {
		t, err := s.cost(n, b, c, skip)
		if err != nil {
			return copParts{}, fmt.Errorf("cop %s: %w", m.Model, err)
		}
		// A small operator whose two measurements' noise exceeded its work comes out negative;
		// inside a model it still costs something, never less than nothing.
		p.fam[famIndex(n.Op)] += max(t, 0)
	}
	p.fam[3] = nodeUnit * float64(len(m.Nodes))
	return p, nil
}

// factors fits, per operator family, the factor by which operators cost more (or less) inside a
// whole model than alone — weights evicted from cache by the other layers, ONNX Runtime's fusions
// and layout changes across neighbouring nodes — on the whole-model times of the store's models
// other than exclude, at the measured batch size nearest b on c threads: ridge least squares on
// relative errors, pulled towards 1 (no correction) with weight 1, so a family few models have
// stays near 1. The fourth term is the cost of each node inside a model beyond its one-node
// graph's — the dispatch, at two threads the pool's hand-off, per node, which a one-node graph's
// overhead I(x) counts once per graph — pulled towards 0. Without whole-model times the factors
// are 1 and the node term 0.
func (s *COPStore) factors(b, c int, exclude string, skip map[string]bool) [nFactors]float64 {
	prior := [nFactors]float64{1, 1, 1, 0}
	k := prior
	mb, best := 0, math.Inf(1)
	for _, m := range s.Models {
		for _, p := range m.Measured {
			if d := math.Abs(math.Log(float64(p.Batch) / float64(b))); m.Model != exclude && p.Threads == c && d < best {
				mb, best = p.Batch, d
			}
		}
	}
	if mb == 0 {
		return k
	}
	const lambda = 1.0
	a := make([][]float64, nFactors) // normal equations (AᵀA + λI | Aᵀy + λ·prior)
	for f := range a {
		a[f] = make([]float64, nFactors+1)
		a[f][f], a[f][nFactors] = lambda, lambda*prior[f]
	}
	for _, m := range s.Models {
		if m.Model == exclude {
			continue
		}
		for _, pt := range m.Measured {
			if pt.Batch != mb || pt.Threads != c {
				continue
			}
			p, err := s.parts(m, mb, c, skip)
			if err != nil {
				continue
			}
			var x [nFactors]float64
			for f := range x {
				x[f] = p.fam[f] / pt.NS
			}
			y := (pt.NS - p.over) / pt.NS
			for i := range x {
				for j := range x {
					a[i][j] += x[i] * x[j]
				}
				a[i][nFactors] += x[i] * y
			}
		}
	}
	sol, ok := solveLinear(a)
	if !ok {
		return k
	}
	for f := range k {
		if sol[f] > 0 && !math.IsInf(sol[f], 0) {
			k[f] = sol[f]
		}
	}
	return k
}

// solveLinear solves an n×n linear system given as an n×(n+1) augmented matrix, in place
// (Gaussian elimination with partial pivoting); ok is false when it is singular.
func solveLinear(a [][]float64) (x []float64, ok bool) {
	n := len(a)
	for col := range n {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		if math.Abs(a[piv][col]) < 1e-12 {
			return nil, false
		}
		a[col], a[piv] = a[piv], a[col]
		for r := range n {
			if r == col {
				continue
			}
			f := a[r][col] / a[col][col]
			for k := col; k <= n; k++ {
				a[r][k] -= f * a[col][k]
			}
		}
	}
	x = make([]float64, n)
	for i := range n {
		x[i] = a[i][n] / a[i][i]
	}
	return x, true
}

// overhead is I(dims) at ⟨b, c⟩ — of the measured dims with the nearest element count when dims
// were not measured — linear in b between the measured batch sizes and beyond the last two.
func (s *COPStore) overhead(dims string, b, c int) (float64, error) {
	want, near, best := dimsElems(dims), "", math.Inf(1)
	for _, o := range s.Overhead {
		if d := math.Abs(math.Log(float64(dimsElems(o.In)) / float64(want))); o.Threads == c && d < best {
			near, best = o.In, d
		}
	}
	var pts [][2]float64
	for _, o := range s.Overhead {
		if o.Threads == c && o.In == near {
			pts = append(pts, [2]float64{float64(o.Batch), o.NS})
		}
	}
	if len(pts) == 0 {
		return 0, fmt.Errorf("no call overhead measured at %d threads", c)
	}
	return max(interpolate(pts, float64(b)), 0), nil
}

// dimsElems is the element count of per-sample dims ("1x28x28" → 784; "" → 1).
func dimsElems(dims string) int64 {
	n := int64(1)
	for _, f := range strings.Split(dims, "x") {
		if v, err := strconv.ParseInt(f, 10, 64); err == nil && v > 0 {
			n *= v
		}
	}
	return n
}

// cost is one node's cost at ⟨b, c⟩ (COP's rule above).
func (s *COPStore) cost(n COPNode, b, c int, skip map[string]bool) (float64, error) {
	sig := n.Sig()
	var pts [][2]float64
	same := func(o COPOp) bool { return o.Op == n.Op }
	if !slices.ContainsFunc(s.Ops, func(o COPOp) bool { return same(o) && o.Threads == c && !skip[o.Sig()] }) {
		same = func(o COPOp) bool { return opFamily(o.Op) != "" && opFamily(o.Op) == opFamily(n.Op) }
	}
	mb, bestD := 0, math.Inf(1)
	for _, o := range s.Ops {
		if !same(o) || o.Threads != c || skip[o.Sig()] {
			continue
		}
		if d := math.Abs(math.Log(float64(o.Batch) / float64(b))); d < bestD || (d == bestD && o.Batch > mb) {
			mb, bestD = o.Batch, d
		}
	}
	if mb == 0 {
		return 0, fmt.Errorf("no %s operator (nor one of its family) measured at %d threads", n.Op, c)
	}
	var peers []COPOp
	for _, o := range s.Ops {
		if !same(o) || o.Threads != c || o.Batch != mb || skip[o.Sig()] {
			continue
		}
		if o.Sig() == sig && mb == b {
			return o.CostNS, nil
		}
		pts = append(pts, [2]float64{o.Work * float64(mb), o.CostNS})
		peers = append(peers, o)
	}
	if t, ok := convCost(n, b, peers); ok {
		return t, nil
	}
	w := n.Work * float64(b)
	if len(pts) == 1 || w <= 0 {
		p := pts[0]
		if p[0] <= 0 || w <= 0 {
			return p[1], nil
		}
		return p[1] * w / p[0], nil
	}
	return interpolateScaled(pts, w), nil
}

// opFamily groups operator types whose cost is one pass over their output: an operator type the
// store never measured is predicted from its family's (an Add from a Relu), scaled by work.
func opFamily(op string) string {
	switch op {
	case "Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Cos", "Sin", "Exp", "Identity", "Clip", "LeakyRelu":
		return "elementwise"
	case "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose":
		return "layout"
	case "Gemm", "MatMul":
		return "matmul"
	case "AveragePool", "MaxPool", "GlobalAveragePool":
		return "pool"
	}
	return ""
}

// interpolate is the piecewise-linear function through pts (x, y) at x, extended linearly
// beyond the ends (flat with a single point).
func interpolate(pts [][2]float64, x float64) float64 {
	pts = sortedUnique(pts)
	if len(pts) == 1 {
		return pts[0][1]
	}
	i := 1
	for i < len(pts)-1 && pts[i][0] < x {
		i++
	}
	a, b := pts[i-1], pts[i]
	return a[1] + (b[1]-a[1])*(x-a[0])/(b[0]-a[0])
}

// interpolateScaled is interpolate between the two points that bracket x; below their range, the
// smallest point scaled by x / its x (an operator's cost in proportion to its work); above it, the
// largest point with a positive cost, scaled likewise.
func interpolateScaled(pts [][2]float64, x float64) float64 {
	pts = sortedUnique(pts)
	first, last := pts[0], pts[len(pts)-1]
	switch {
	case x <= first[0]:
		return first[1] * x / max(first[0], 1e-9)
	case x >= last[0]:
		// Beyond the largest: the largest with a positive cost (a small operator's cost can come
		// out negative when the noise of its two measurements exceeds its work).
		for i := len(pts) - 1; i >= 0; i-- {
			if pts[i][1] > 0 {
				return pts[i][1] * x / pts[i][0]
			}
		}
		return 0
	}
	return interpolate(pts, x)
}

// sortedUnique sorts pts by x and averages the y of equal x.
func sortedUnique(pts [][2]float64) [][2]float64 {
	c := slices.Clone(pts)
	slices.SortFunc(c, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	out := c[:0]
	n := 0
	for _, p := range c {
		if len(out) > 0 && out[len(out)-1][0] == p[0] {
			n++
			out[len(out)-1][1] += (p[1] - out[len(out)-1][1]) / float64(n)
			continue
		}
		out, n = append(out, p), 1
	}
	return out
}

// LOOPoint is one leave-one-out prediction: a model's batch time at ⟨b, c⟩ predicted from the
// store without its own operators' signatures, against its measured median.
type LOOPoint struct {
	Model     string  `json:"model"`
	Batch     int     `json:"batch"`
	Threads   int     `json:"threads"`
	Predicted float64 `json:"predicted_ns"`
	Measured  float64 `json:"measured_ns"`
	// Error is |P̂ − P| / P (INFless Fig. 8, before the offset).
	Error float64 `json:"error"`
}

// LeaveOneOut predicts every measured point of every model in s from a store built from the
// other models only: an operator whose signature no other model has is left out, so the model's
// own layers are predicted from other shapes, scaled by work; the ones it shares with another
// model (the same Softmax over 10 classes, the same 784×256 Gemm) stay, as they would in a store
// built without it.
func (s *COPStore) LeaveOneOut() ([]LOOPoint, error) {
	owners := map[string]map[string]bool{}
	for _, m := range s.Models {
		for _, n := range m.Nodes {
			if owners[n.Sig()] == nil {
				owners[n.Sig()] = map[string]bool{}
			}
			owners[n.Sig()][m.Model] = true
		}
	}
	var out []LOOPoint
	for _, m := range s.Models {
		skip := map[string]bool{}
		for _, n := range m.Nodes {
			if len(owners[n.Sig()]) == 1 {
				skip[n.Sig()] = true
			}
		}
		for _, p := range m.Measured {
			t, err := s.Predict(m, p.Batch, p.Threads, skip)
			if err != nil {
				return nil, fmt.Errorf("leave-one-out: %w", err)
			}
			out = append(out, LOOPoint{Model: m.Model, Batch: p.Batch, Threads: p.Threads, Predicted: float64(t), Measured: p.NS,
				Error: math.Abs(float64(t)-p.NS) / p.NS})
		}
	}
	return out, nil
}

// LOOMean is the mean Error of the points at batch b and threads c (0: any).
func LOOMean(ps []LOOPoint, b, c int) (mean float64, n int) {
	for _, p := range ps {
		if (b == 0 || p.Batch == b) && (c == 0 || p.Threads == c) {
			mean += p.Error
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return mean / float64(n), n
}

// INFlessProfile is the INFless profile COP predicts for m: every thread count the store holds ×
// batch sizes 1, 2, 4, … up to maxBatch, no GPU — the grid Alg. 1 searches (INFless §3.3 builds it
// from operator profiles instead of profiling the model at every ⟨b, c, g⟩).
func (s *COPStore) INFlessProfile(m COPModel, maxBatch int) (INFlessProfile, error) {
	p := INFlessProfile{Model: m.Model}
	for _, c := range s.Threads() {
		for b := 1; b <= max(maxBatch, 1); b *= 2 {
			t, err := s.Predict(m, b, c, nil)
			if err != nil {
				return INFlessProfile{}, err
			}
			p.Points = append(p.Points, INFlessPoint{CPU: c, Batch: b, Latency: t})
		}
	}
	return p, nil
}

// TranscendentalFLOPs is the work per element COP counts for a transcendental function (Cos,
// Exp, Tanh, …) against 1 for Relu or Add: a range reduction and a polynomial of degree ~10, about
// 16 FLOPs. It matters only when a model's transcendental is predicted from its family's other
// members (measured on this machine: Cos ≈ 1.4 ns per element, Relu ≈ 0.05–0.1).
const TranscendentalFLOPs = 16

// ConvOutputWork is the work COP counts per output element of a convolution on top of its 2·K
// FLOPs: ONNX Runtime converts a convolution's input and output to and from its blocked NCHWc
// layout and writes every output element, work that scales with the output, not with K. Measured
// on this machine's one-node Conv graphs: a 1→8-channel 3×3 convolution on 28×28 takes 3.6× the
// time of an 8→16-channel one with the same FLOPs and an eighth of the outputs; with 64 per output
// their costs per unit of work agree within 1.6×, against 3.6× by FLOPs alone.
const ConvOutputWork = 64

// COPNodes builds m's COP task graph from its ONNX graph g and each node's runtime input and
// output shapes at batch 1 (in[i][k] nil for a constant input; models.InferShapes).
func COPNodes(g *onnx.Graph, in [][][]int64, out [][]int64) ([]COPNode, error) {
	if len(in) != len(g.Nodes) || len(out) != len(g.Nodes) {
		return nil, fmt.Errorf("cop graph: %d nodes, %d input and %d output shapes", len(g.Nodes), len(in), len(out))
	}
	og := OpGraphFromONNX(g)
	nodes := make([]COPNode, len(g.Nodes))
	for i, nd := range g.Nodes {
		var dims []string
		var k int64 = 1
		for _, sh := range in[i] {
			if sh != nil {
				dims = append(dims, perSample(sh))
				if len(sh) > 0 {
					k = max(k, sh[len(sh)-1])
				}
				break
			}
		}
		outN := float64(elems(out[i]))
		work := outN
		switch nd.OpType {
		case "Gemm", "MatMul":
			if len(in[i]) > 0 && in[i][0] != nil && nd.AttrInt("transA", 0) == 0 {
				k = in[i][0][len(in[i][0])-1]
			}
			work = 2 * outN * float64(k)
		case "Conv":
			if w, ok := g.Initializer(nd.Inputs[1]); ok && len(w.Dims) == 4 {
				work = outN * (2*float64(w.Dims[1]*w.Dims[2]*w.Dims[3]) + ConvOutputWork)
			}
		case "AveragePool", "MaxPool":
			ks := nd.AttrInts("kernel_shape")
			work = outN * float64(elems(ks))
		case "Cos", "Sin", "Exp", "Log", "Tanh", "Sigmoid", "Erf":
			work = TranscendentalFLOPs * outN
		}
		nodes[i] = COPNode{Op: nd.OpType, Size: og[i].Size, In: strings.Join(dims, ";"), Out: perSample(out[i]), Work: work}
	}
	return nodes, nil
}

// perSample formats a batch-1 shape without its batch dimension ("784", "1x28x28").
func perSample(sh []int64) string {
	if len(sh) > 1 {
		sh = sh[1:]
	}
	ds := make([]string, len(sh))
	for i, d := range sh {
		ds[i] = strconv.FormatInt(d, 10)
	}
	return strings.Join(ds, "x")
}

// PerSample is perSample for callers that key overheads by a model's input.
func PerSample(sh []int64) string { return perSample(sh) }

func elems(sh []int64) int64 {
	n := int64(1)
	for _, d := range sh {
		n *= max(d, 1)
	}
	return n
}

// convFeatures is a convolution's per-sample terms in convCost: the elements it reads and
// writes (each converted to and from ONNX Runtime's blocked NCHWc layout, memory traffic that
// scales with the tensors, not with the kernel) and its FLOPs (2·K per output).
func convFeatures(n COPNode) [3]float64 {
	out := float64(dimsElems(n.Out))
	return [3]float64{float64(dimsElems(n.In)), out, max(n.Work-ConvOutputWork*out, 0)}
}

// convCost predicts a convolution the store never measured from the measured ones (peers, all at
// one ⟨b', c⟩): cost = b·(α·inputs + β·outputs + γ·FLOPs) per sample, with α, β, γ ≥ 0 a
// least-squares fit on the peers' costs relative to their own (each peer weighs alike, large or
// small). One work scale cannot hold both a 1→8-channel 3×3 convolution on 28×28 (memory-bound:
// 6,272 outputs of 18 FLOPs) and a 16→32-channel one on 14×14 (compute-bound: 1,568 outputs of 288
// FLOPs); the two terms can. ok is false with fewer than three peers or no non-negative fit.
func convCost(n COPNode, b int, peers []COPOp) (float64, bool) {
	if n.Op != "Conv" || len(peers) < 3 {
		return 0, false
	}
	var xs [][3]float64
	var ys []float64
	for _, o := range peers {
		if o.CostNS <= 0 {
			continue
		}
		f := convFeatures(o.COPNode)
		for j := range f {
			f[j] *= float64(o.Batch) / o.CostNS
		}
		xs, ys = append(xs, f), append(ys, 1)
	}
	theta, ok := nnls3(xs, ys)
	if !ok {
		return 0, false
	}
	f := convFeatures(n)
	return float64(b) * (theta[0]*f[0] + theta[1]*f[1] + theta[2]*f[2]), true
}

// nnls3 is non-negative least squares in three unknowns: min ‖X·θ − y‖² over θ ≥ 0, by trying
// every set of free unknowns (seven) and keeping the best feasible one. ok is false when no
// subset gives a positive fit (fewer points than unknowns in every subset, or all negative).
func nnls3(xs [][3]float64, ys []float64) (theta [3]float64, ok bool) {
	best := math.Inf(1)
	for mask := 1; mask < 8; mask++ {
		a := make([][]float64, 3)
		for i := range a {
			a[i] = make([]float64, 4)
			if mask&(1<<i) == 0 {
				a[i][i] = 1 // pinned at 0
			}
		}
		for k, x := range xs {
			for i := range 3 {
				if mask&(1<<i) == 0 {
					continue
				}
				for j := range 3 {
					if mask&(1<<j) != 0 {
						a[i][j] += x[i] * x[j]
					}
				}
				a[i][3] += x[i] * ys[k]
			}
		}
		sol, good := solveLinear(a)
		if !good || sol[0] < 0 || sol[1] < 0 || sol[2] < 0 {
			continue
		}
		var r float64
		for k, x := range xs {
			d := sol[0]*x[0] + sol[1]*x[1] + sol[2]*x[2] - ys[k]
			r += d * d
		}
		if r < best {
			theta, best, ok = [3]float64(sol), r, true
		}
	}
	return theta, ok
}
