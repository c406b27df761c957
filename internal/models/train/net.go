package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/gonum"

	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/models/onnx"
)

var blas gonum.Implementation

// LayerKind is the kind of one layer of a branch.
type LayerKind int

// The layer kinds a branch is built from.
const (
	// Dense is a fully connected layer y = x·W + b (ONNX Gemm with W stored [In×Out]).
	Dense LayerKind = iota
	// ReLU is max(x, 0) (ONNX Relu).
	ReLU
	// AvgPool2 is a 2×2, stride-2 average pool of the 28×28 image (ONNX Reshape → AveragePool →
	// Flatten); it must be a branch's first layer and turns 784 inputs into 196.
	AvgPool2
	// AvgPool is an average pool of the 28×28 image with Layer.Pool's kernel and strides (no
	// padding; ONNX Reshape → AveragePool → Flatten), a branch's first layer: an input view such
	// as a coarser 4×4 grid, an overlapping 3×3/2 pool or row and column projections (kernel 1×28
	// or 28×1).
	AvgPool
)

// PoolShape is an AvgPool layer's kernel and strides in pixels.
type PoolShape struct {
	KH, KW, SH, SW int
}

// out returns the pooled width of a 28×28 image.
func (p PoolShape) out() (oh, ow int) {
	return (fashion.Rows-p.KH)/p.SH + 1, (fashion.Cols-p.KW)/p.SW + 1
}

// Layer is one layer of a branch; In and Out are only meaningful for Dense, Pool for AvgPool.
type Layer struct {
	Kind    LayerKind
	In, Out int
	Pool    PoolShape
}

// Arch is a classifier: one or more parallel branches over the same 784-pixel input whose
// 10-logit outputs are added, then a softmax. A single branch is a plain feed-forward net; two
// branches give a non-chain DAG.
type Arch struct {
	Name        string
	Description string
	Branches    [][]Layer
}

// Validate checks that each branch maps 784 inputs to 10 logits with matching layer sizes.
func (a Arch) Validate() error {
	if a.Name == "" || len(a.Branches) == 0 {
		return fmt.Errorf("arch %q: needs a name and at least one branch", a.Name)
	}
	for bi, br := range a.Branches {
		width := fashion.Pixels
		for li, l := range br {
			switch l.Kind {
			case Dense:
				if l.In != width || l.Out <= 0 {
					return fmt.Errorf("arch %q branch %d layer %d: dense %d→%d after width %d", a.Name, bi, li, l.In, l.Out, width)
				}
				width = l.Out
			case AvgPool2:
				if li != 0 {
					return fmt.Errorf("arch %q branch %d layer %d: AvgPool2 must come first", a.Name, bi, li)
				}
				width = fashion.Pixels / 4
			case AvgPool:
				p := l.Pool
				if li != 0 {
					return fmt.Errorf("arch %q branch %d layer %d: AvgPool must come first", a.Name, bi, li)
				}
				if p.KH < 1 || p.KW < 1 || p.SH < 1 || p.SW < 1 || p.KH > fashion.Rows || p.KW > fashion.Cols {
					return fmt.Errorf("arch %q branch %d: AvgPool %+v out of range", a.Name, bi, p)
				}
				oh, ow := p.out()
				width = oh * ow
			}
		}
		if width != fashion.NumClasses {
			return fmt.Errorf("arch %q branch %d ends with width %d, want %d", a.Name, bi, width, fashion.NumClasses)
		}
	}
	return nil
}

// denseParams holds one Dense layer's weights and Adam state.
type denseParams struct {
	w, b   []float32 // w is [In×Out] row-major
	gw, gb []float32
	mw, vw []float32
	mb, vb []float32
}

// net is a trainable instance of an Arch.
type net struct {
	arch  Arch
	dense [][]*denseParams // per branch, per layer (nil for non-dense layers)
}

func newNet(a Arch, rng *rand.Rand) *net {
	n := &net{arch: a}
	for _, br := range a.Branches {
		ps := make([]*denseParams, len(br))
		for i, l := range br {
			if l.Kind != Dense {
				continue
			}
			p := &denseParams{
				w: make([]float32, l.In*l.Out), b: make([]float32, l.Out),
				gw: make([]float32, l.In*l.Out), gb: make([]float32, l.Out),
				mw: make([]float32, l.In*l.Out), vw: make([]float32, l.In*l.Out),
				mb: make([]float32, l.Out), vb: make([]float32, l.Out),
			}
			// He initialisation for ReLU networks: N(0, 2/fan_in).
			std := math.Sqrt(2 / float64(l.In))
			for j := range p.w {
				p.w[j] = float32(rng.NormFloat64() * std)
			}
			ps[i] = p
		}
		n.dense = append(n.dense, ps)
	}
	return n
}

// params returns the number of trainable parameters.
func (n *net) params() int {
	c := 0
	for _, br := range n.dense {
		for _, p := range br {
			if p != nil {
				c += len(p.w) + len(p.b)
			}
		}
	}
	return c
}

// forward computes each branch's activations for a batch x [B×784]; acts[b][i] is the input of
// layer i of branch b and acts[b][len] the branch's logits.
func (n *net) forward(x []float32, bs int) [][][]float32 {
	acts := make([][][]float32, len(n.arch.Branches))
	for bi, br := range n.arch.Branches {
		a := [][]float32{x}
		cur := x
		for li, l := range br {
			var next []float32
			switch l.Kind {
			case Dense:
				p := n.dense[bi][li]
				next = make([]float32, bs*l.Out)
				for r := 0; r < bs; r++ {
					copy(next[r*l.Out:(r+1)*l.Out], p.b)
				}
				matmulAdd(next, cur, p.w, bs, l.In, l.Out)
			case ReLU:
				next = make([]float32, len(cur))
				for i, v := range cur {
					next[i] = max(v, 0)
				}
			case AvgPool2:
				next = avgPool2(cur, bs)
			case AvgPool:
				next = avgPool(cur, bs, l.Pool)
			}
			a = append(a, next)
			cur = next
		}
		acts[bi] = a
	}
	return acts
}

// matmulAdd computes out[M×N] += a[M×K]·w[K×N], skipping zeros of a.
func matmulAdd(out, a, w []float32, m, k, n int) {
	for r := 0; r < m; r++ {
		arow := a[r*k : (r+1)*k]
		orow := out[r*n : (r+1)*n]
		for kk, x := range arow {
			if x != 0 {
				blas.Saxpy(n, x, w[kk*n:(kk+1)*n], 1, orow, 1)
			}
		}
	}
}

func avgPool2(x []float32, bs int) []float32 {
	const h, w, oh, ow = fashion.Rows, fashion.Cols, fashion.Rows / 2, fashion.Cols / 2
	out := make([]float32, bs*oh*ow)
	for r := 0; r < bs; r++ {
		src := x[r*h*w : (r+1)*h*w]
		dst := out[r*oh*ow : (r+1)*oh*ow]
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				s := src[2*i*w+2*j] + src[2*i*w+2*j+1] + src[(2*i+1)*w+2*j] + src[(2*i+1)*w+2*j+1]
				dst[i*ow+j] = s * 0.25
			}
		}
	}
	return out
}

// avgPool pools each 28×28 image of x with p (no padding).
func avgPool(x []float32, bs int, p PoolShape) []float32 {
	const h, w = fashion.Rows, fashion.Cols
	oh, ow := p.out()
	inv := 1 / float32(p.KH*p.KW)
	out := make([]float32, bs*oh*ow)
	for r := 0; r < bs; r++ {
		src := x[r*h*w : (r+1)*h*w]
		dst := out[r*oh*ow : (r+1)*oh*ow]
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				var s float32
				for di := 0; di < p.KH; di++ {
					row := src[(i*p.SH+di)*w+j*p.SW:]
					for dj := 0; dj < p.KW; dj++ {
						s += row[dj]
					}
				}
				dst[i*ow+j] = s * inv
			}
		}
	}
	return out
}

// logits sums the branches' outputs.
func logits(acts [][][]float32) []float32 {
	out := append([]float32(nil), acts[0][len(acts[0])-1]...)
	for _, a := range acts[1:] {
		for i, v := range a[len(a)-1] {
			out[i] += v
		}
	}
	return out
}

// backward accumulates parameter gradients given dL/dlogits g [B×10].
func (n *net) backward(acts [][][]float32, g []float32, bs int) {
	for bi, br := range n.arch.Branches {
		cur := g
		for li := len(br) - 1; li >= 0; li-- {
			l := br[li]
			in := acts[bi][li]
			needIn := li > 0 // the first layer's input is the image: no gradient needed
			switch l.Kind {
			case Dense:
				p := n.dense[bi][li]
				for r := 0; r < bs; r++ {
					grow := cur[r*l.Out : (r+1)*l.Out]
					for j, v := range grow {
						p.gb[j] += v
					}
					irow := in[r*l.In : (r+1)*l.In]
					for k, x := range irow {
						if x != 0 {
							blas.Saxpy(l.Out, x, grow, 1, p.gw[k*l.Out:(k+1)*l.Out], 1)
						}
					}
				}
				if needIn {
					gin := make([]float32, bs*l.In)
					for r := 0; r < bs; r++ {
						grow := cur[r*l.Out : (r+1)*l.Out]
						for k := 0; k < l.In; k++ {
							gin[r*l.In+k] = blas.Sdot(l.Out, p.w[k*l.Out:(k+1)*l.Out], 1, grow, 1)
						}
					}
					cur = gin
				}
			case ReLU:
				out := acts[bi][li+1]
				gin := make([]float32, len(cur))
				for i, v := range cur {
					if out[i] > 0 {
						gin[i] = v
					}
				}
				cur = gin
			case AvgPool2, AvgPool:
				// First layer by construction: nothing upstream needs its gradient.
			}
		}
	}
}

// adamStep applies one Adam update (Kingma & Ba 2015, Alg. 1) to every parameter and clears the
// gradients; t is the 1-based step count.
func (n *net) adamStep(lr float64, t int) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	step := float32(lr * math.Sqrt(c2) / c1)
	upd := func(w, g, m, v []float32) {
		for i, gi := range g {
			m[i] = b1*m[i] + (1-b1)*gi
			v[i] = b2*v[i] + (1-b2)*gi*gi
			w[i] -= step * m[i] / (float32(math.Sqrt(float64(v[i]))) + eps)
			g[i] = 0
		}
	}
	for _, br := range n.dense {
		for _, p := range br {
			if p != nil {
				upd(p.w, p.gw, p.mw, p.vw)
				upd(p.b, p.gb, p.mb, p.vb)
			}
		}
	}
}

// softmaxGrad turns logits into dL/dlogits of the mean cross-entropy, in place, and returns the
// batch's summed loss.
func softmaxGrad(z []float32, labels []uint8) float64 {
	const k = fashion.NumClasses
	bs := len(labels)
	var loss float64
	for r := 0; r < bs; r++ {
		row := z[r*k : (r+1)*k]
		mx := row[0]
		for _, v := range row {
			mx = max(mx, v)
		}
		var sum float64
		for i, v := range row {
			e := math.Exp(float64(v - mx))
			row[i] = float32(e)
			sum += e
		}
		for i := range row {
			p := float64(row[i]) / sum
			if i == int(labels[r]) {
				loss -= math.Log(max(p, 1e-12))
				p--
			}
			row[i] = float32(p / float64(bs))
		}
	}
	return loss
}

// Export builds the ONNX model of the trained net: input "input" [N×784] (pixel/255), output
// "probs" [N×10] (softmax); each Dense layer is a Gemm with W as [In×Out] (transB = 0).
func (n *net) export(meta map[string]string) *onnx.Model {
	g := onnx.Graph{
		Name:    n.arch.Name,
		Inputs:  []onnx.ValueInfo{{Name: InputName, ElemType: onnx.Float, Shape: []onnx.Dim{{Param: "N"}, {Value: fashion.Pixels}}}},
		Outputs: []onnx.ValueInfo{{Name: OutputName, ElemType: onnx.Float, Shape: []onnx.Dim{{Param: "N"}, {Value: fashion.NumClasses}}}},
	}
	var branchOut []string
	for bi, br := range n.arch.Branches {
		cur := InputName
		prefix := ""
		if len(n.arch.Branches) > 1 {
			prefix = fmt.Sprintf("b%d_", bi)
		}
		fc := 0
		for li, l := range br {
			switch l.Kind {
			case Dense:
				fc++
				name := fmt.Sprintf("%sfc%d", prefix, fc)
				p := n.dense[bi][li]
				g.Initializers = append(g.Initializers,
					onnx.FloatTensor(name+".weight", []int64{int64(l.In), int64(l.Out)}, append([]float32(nil), p.w...)),
					onnx.FloatTensor(name+".bias", []int64{int64(l.Out)}, append([]float32(nil), p.b...)))
				g.Nodes = append(g.Nodes, onnx.Node{Name: name, OpType: "Gemm",
					Inputs: []string{cur, name + ".weight", name + ".bias"}, Outputs: []string{name + ".out"}})
				cur = name + ".out"
			case ReLU:
				name := fmt.Sprintf("%srelu%d", prefix, fc)
				g.Nodes = append(g.Nodes, onnx.Node{Name: name, OpType: "Relu", Inputs: []string{cur}, Outputs: []string{name + ".out"}})
				cur = name + ".out"
			case AvgPool2:
				shape := prefix + "image_shape"
				g.Initializers = append(g.Initializers, onnx.Int64Tensor(shape, []int64{4}, []int64{-1, 1, fashion.Rows, fashion.Cols}))
				g.Nodes = append(g.Nodes,
					onnx.Node{Name: prefix + "to_image", OpType: "Reshape", Inputs: []string{cur, shape}, Outputs: []string{prefix + "image"}},
					onnx.Node{Name: prefix + "pool", OpType: "AveragePool", Inputs: []string{prefix + "image"}, Outputs: []string{prefix + "pooled"},
						Attributes: []onnx.Attribute{onnx.IntsAttr("kernel_shape", 2, 2), onnx.IntsAttr("strides", 2, 2)}},
					onnx.Node{Name: prefix + "flatten", OpType: "Flatten", Inputs: []string{prefix + "pooled"}, Outputs: []string{prefix + "flat"},
						Attributes: []onnx.Attribute{onnx.IntAttr("axis", 1)}})
				cur = prefix + "flat"
			case AvgPool:
				p := l.Pool
				shape := prefix + "image_shape"
				g.Initializers = append(g.Initializers, onnx.Int64Tensor(shape, []int64{4}, []int64{-1, 1, fashion.Rows, fashion.Cols}))
				g.Nodes = append(g.Nodes,
					onnx.Node{Name: prefix + "to_image", OpType: "Reshape", Inputs: []string{cur, shape}, Outputs: []string{prefix + "image"}},
					onnx.Node{Name: prefix + "pool", OpType: "AveragePool", Inputs: []string{prefix + "image"}, Outputs: []string{prefix + "pooled"},
						Attributes: []onnx.Attribute{onnx.IntsAttr("kernel_shape", int64(p.KH), int64(p.KW)), onnx.IntsAttr("strides", int64(p.SH), int64(p.SW))}},
					onnx.Node{Name: prefix + "flatten", OpType: "Flatten", Inputs: []string{prefix + "pooled"}, Outputs: []string{prefix + "flat"},
						Attributes: []onnx.Attribute{onnx.IntAttr("axis", 1)}})
				cur = prefix + "flat"
			}
		}
		branchOut = append(branchOut, cur)
	}
	cur := branchOut[0]
	for i, o := range branchOut[1:] {
		name := fmt.Sprintf("sum%d", i+1)
		g.Nodes = append(g.Nodes, onnx.Node{Name: name, OpType: "Add", Inputs: []string{cur, o}, Outputs: []string{name + ".out"}})
		cur = name + ".out"
	}
	g.Nodes = append(g.Nodes, onnx.Node{Name: "softmax", OpType: "Softmax", Inputs: []string{cur}, Outputs: []string{OutputName},
		Attributes: []onnx.Attribute{onnx.IntAttr("axis", 1)}})
	return &onnx.Model{ProducerName: "sloserve", ProducerVer: "1", DocString: n.arch.Description, Metadata: meta, Graph: g}
}

// InputName and OutputName are the tensor names of every bundled model.
const (
	InputName  = "input"
	OutputName = "probs"
)
