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
	// Conv is a 2-D convolution with Layer.Conv's filters (ONNX Conv, group 1) over the 1×28×28
	// image when it comes first, else over the previous Conv's output. Inside the trainer a
	// feature map is stored position-major ([H·W×C] per image) so that a Conv is an im2col
	// followed by a Dense; export converts to ONNX's NCHW.
	Conv
	// Cos is cos(x) (ONNX Cos): after a frozen Dense with InitFourier weights it makes random
	// Fourier features (Rahimi & Recht 2007), a kernel machine whose last Dense is the only
	// trained layer.
	Cos
)

// ConvShape is a Conv layer's filter count, square kernel size, stride and zero padding (pixels,
// the same on every side).
type ConvShape struct {
	Out, K, Stride, Pad int
}

// InitKind chooses a layer's initial weights.
type InitKind int

// The initialisations of Dense and Conv layers.
const (
	// InitHe draws N(0, 2/fan_in) weights and zero biases (ReLU networks).
	InitHe InitKind = iota
	// InitFourier draws N(0, 1/Scale²) weights and U[0, 2π) biases: with Cos, random Fourier
	// features of a Gaussian kernel of width Layer.Scale.
	InitFourier
	// InitGiven uses Layer.Weights and zero biases (fixed filters such as oriented gradients).
	InitGiven
)

// shape is the value flowing between layers: flat (c = width, h = w = 0) or a c×h×w map.
type shape struct{ c, h, w int }

func (s shape) size() int {
	if s.h == 0 {
		return s.c
	}
	return s.c * s.h * s.w
}

func (s shape) spatial() bool { return s.h > 0 }

// PoolShape is an AvgPool layer's kernel and strides in pixels.
type PoolShape struct {
	KH, KW, SH, SW int
}

// out returns the pooled width of a 28×28 image.
func (p PoolShape) out() (oh, ow int) {
	return (fashion.Rows-p.KH)/p.SH + 1, (fashion.Cols-p.KW)/p.SW + 1
}

// Layer is one layer of a branch; In and Out are only meaningful for Dense, Pool for AvgPool,
// Conv for Conv.
type Layer struct {
	Kind    LayerKind
	In, Out int
	Pool    PoolShape
	Conv    ConvShape
	// Frozen keeps a Dense or Conv layer at its initial weights: fixed feature maps and random
	// features.
	Frozen bool
	// Init and Scale choose the initial weights of a Dense or Conv layer.
	Init  InitKind
	Scale float64
	// Weights are InitGiven's weights, [In×Out] for Dense, [C·K·K×Out] (row (c·K+i)·K+j) for Conv.
	Weights []float32
}

// params reports whether the layer has weights.
func (l Layer) params() bool { return l.Kind == Dense || l.Kind == Conv }

// convOut returns the output size of a Conv over an h×w map.
func (c ConvShape) out(h, w int) (int, int) {
	return (h+2*c.Pad-c.K)/c.Stride + 1, (w+2*c.Pad-c.K)/c.Stride + 1
}

// shapes returns the input shape of each layer of br and the branch's output shape.
func shapes(br []Layer) ([]shape, shape, error) {
	cur := shape{c: fashion.Pixels}
	out := make([]shape, len(br))
	for li, l := range br {
		out[li] = cur
		switch l.Kind {
		case Dense:
			if l.In != cur.size() || l.Out <= 0 {
				return nil, cur, fmt.Errorf("layer %d: dense %d→%d after width %d", li, l.In, l.Out, cur.size())
			}
			if l.Init == InitGiven && len(l.Weights) != l.In*l.Out {
				return nil, cur, fmt.Errorf("layer %d: %d given weights for dense %d→%d", li, len(l.Weights), l.In, l.Out)
			}
			cur = shape{c: l.Out}
		case AvgPool2:
			if li != 0 {
				return nil, cur, fmt.Errorf("layer %d: AvgPool2 must come first", li)
			}
			cur = shape{c: fashion.Pixels / 4}
		case AvgPool:
			p := l.Pool
			if li != 0 {
				return nil, cur, fmt.Errorf("layer %d: AvgPool must come first", li)
			}
			if p.KH < 1 || p.KW < 1 || p.SH < 1 || p.SW < 1 || p.KH > fashion.Rows || p.KW > fashion.Cols {
				return nil, cur, fmt.Errorf("layer %d: AvgPool %+v out of range", li, p)
			}
			oh, ow := p.out()
			cur = shape{c: oh * ow}
		case Conv:
			c := l.Conv
			in := cur
			if li == 0 {
				in = shape{c: 1, h: fashion.Rows, w: fashion.Cols}
			} else if !in.spatial() {
				return nil, cur, fmt.Errorf("layer %d: Conv after a flat layer", li)
			}
			if c.Out < 1 || c.K < 1 || c.Stride < 1 || c.Pad < 0 || c.K > in.h+2*c.Pad || c.K > in.w+2*c.Pad {
				return nil, cur, fmt.Errorf("layer %d: Conv %+v over %d×%d", li, c, in.h, in.w)
			}
			if l.Init == InitGiven && len(l.Weights) != in.c*c.K*c.K*c.Out {
				return nil, cur, fmt.Errorf("layer %d: %d given weights for conv %+v", li, len(l.Weights), c)
			}
			out[li] = in
			oh, ow := c.out(in.h, in.w)
			cur = shape{c: c.Out, h: oh, w: ow}
		}
	}
	return out, cur, nil
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
		_, out, err := shapes(br)
		if err != nil {
			return fmt.Errorf("arch %q branch %d %w", a.Name, bi, err)
		}
		if out.size() != fashion.NumClasses || out.spatial() {
			return fmt.Errorf("arch %q branch %d ends with width %d, want %d", a.Name, bi, out.size(), fashion.NumClasses)
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
	dense [][]*denseParams // per branch, per layer (nil for layers without weights)
	in    [][]shape        // per branch, each layer's input shape
}

func newNet(a Arch, rng *rand.Rand) *net {
	n := &net{arch: a}
	for _, br := range a.Branches {
		in, _, _ := shapes(br) // Validate checked them
		n.in = append(n.in, in)
		ps := make([]*denseParams, len(br))
		for i, l := range br {
			if !l.params() {
				continue
			}
			fanIn, out := l.In, l.Out
			if l.Kind == Conv {
				fanIn, out = in[i].c*l.Conv.K*l.Conv.K, l.Conv.Out
			}
			p := &denseParams{
				w: make([]float32, fanIn*out), b: make([]float32, out),
				gw: make([]float32, fanIn*out), gb: make([]float32, out),
				mw: make([]float32, fanIn*out), vw: make([]float32, fanIn*out),
				mb: make([]float32, out), vb: make([]float32, out),
			}
			switch l.Init {
			case InitFourier:
				std := 1 / l.Scale
				for j := range p.w {
					p.w[j] = float32(rng.NormFloat64() * std)
				}
				for j := range p.b {
					p.b[j] = float32(rng.Float64() * 2 * math.Pi)
				}
			case InitGiven:
				copy(p.w, l.Weights)
			default:
				// He initialisation for ReLU networks: N(0, 2/fan_in).
				std := math.Sqrt(2 / float64(fanIn))
				for j := range p.w {
					p.w[j] = float32(rng.NormFloat64() * std)
				}
			}
			ps[i] = p
		}
		n.dense = append(n.dense, ps)
	}
	return n
}

// patchIndex maps each cell of one map's unfolded patches (row (c·K+i)·K+j within the patch of
// output position p, at p·C·K·K + that row) to its element in the position-major map, or -1
// where the patch lies outside the map. im2col and its adjoint col2im both walk it.
func patchIndex(in shape, c ConvShape) []int {
	oh, ow := c.out(in.h, in.w)
	k := in.c * c.K * c.K
	idx := make([]int, oh*ow*k)
	for i := range idx {
		idx[i] = -1
	}
	for i := 0; i < oh; i++ {
		for j := 0; j < ow; j++ {
			row := idx[(i*ow+j)*k:]
			for di := 0; di < c.K; di++ {
				y := i*c.Stride + di - c.Pad
				if y < 0 || y >= in.h {
					continue
				}
				for dj := 0; dj < c.K; dj++ {
					xx := j*c.Stride + dj - c.Pad
					if xx < 0 || xx >= in.w {
						continue
					}
					for ch := 0; ch < in.c; ch++ {
						row[(ch*c.K+di)*c.K+dj] = (y*in.w+xx)*in.c + ch
					}
				}
			}
		}
	}
	return idx
}

// im2col unfolds each position-major map of x (bs maps of shape in) into rows of C·K·K patch
// values, row (c·K+i)·K+j within a patch, zero outside the map.
func im2col(x []float32, bs int, in shape, c ConvShape) []float32 {
	idx := patchIndex(in, c)
	col := make([]float32, bs*len(idx))
	for r := 0; r < bs; r++ {
		src, dst := x[r*in.size():(r+1)*in.size()], col[r*len(idx):(r+1)*len(idx)]
		for q, v := range idx {
			if v >= 0 {
				dst[q] = src[v]
			}
		}
	}
	return col
}

// col2im adds patch gradients back onto position-major maps (the adjoint of im2col).
func col2im(gcol []float32, bs int, in shape, c ConvShape) []float32 {
	idx := patchIndex(in, c)
	g := make([]float32, bs*in.size())
	for r := 0; r < bs; r++ {
		src, dst := gcol[r*len(idx):(r+1)*len(idx)], g[r*in.size():(r+1)*in.size()]
		for q, v := range idx {
			if v >= 0 {
				dst[v] += src[q]
			}
		}
	}
	return g
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
			case Conv:
				in := n.in[bi][li]
				oh, ow := l.Conv.out(in.h, in.w)
				rows, k := bs*oh*ow, in.c*l.Conv.K*l.Conv.K
				p := n.dense[bi][li]
				next = make([]float32, rows*l.Conv.Out)
				for r := 0; r < rows; r++ {
					copy(next[r*l.Conv.Out:(r+1)*l.Conv.Out], p.b)
				}
				matmulAdd(next, im2col(cur, bs, in, l.Conv), p.w, rows, k, l.Conv.Out)
			case Cos:
				next = make([]float32, len(cur))
				for i, v := range cur {
					next[i] = float32(math.Cos(float64(v)))
				}
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

// backward accumulates parameter gradients given dL/dlogits g [B×10]. Frozen layers get no
// gradient, and none flows below the lowest trainable layer.
func (n *net) backward(acts [][][]float32, g []float32, bs int) {
	for bi, br := range n.arch.Branches {
		lowest := len(br)
		for li := len(br) - 1; li >= 0; li-- {
			if br[li].params() && !br[li].Frozen {
				lowest = li
			}
		}
		cur := g
		for li := len(br) - 1; li >= lowest; li-- {
			l := br[li]
			in := acts[bi][li]
			needIn := li > lowest
			switch l.Kind {
			case Dense:
				cur = denseBackward(n.dense[bi][li], in, cur, bs, l.In, l.Out, !l.Frozen, needIn)
			case Conv:
				sh := n.in[bi][li]
				oh, ow := l.Conv.out(sh.h, sh.w)
				k := sh.c * l.Conv.K * l.Conv.K
				gcol := denseBackward(n.dense[bi][li], im2col(in, bs, sh, l.Conv), cur, bs*oh*ow, k, l.Conv.Out, !l.Frozen, needIn)
				if needIn {
					cur = col2im(gcol, bs, sh, l.Conv)
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
			case Cos:
				gin := make([]float32, len(cur))
				for i, v := range cur {
					gin[i] = -v * float32(math.Sin(float64(in[i])))
				}
				cur = gin
			case AvgPool2, AvgPool:
				// First layer by construction: nothing upstream needs its gradient.
			}
		}
	}
}

// denseBackward accumulates the gradients of y = x·W + b over rows of x [rows×in] given dL/dy
// cur [rows×out] (when learn) and returns dL/dx (when needIn, else nil).
func denseBackward(p *denseParams, x, cur []float32, rows, in, out int, learn, needIn bool) []float32 {
	if learn {
		for r := 0; r < rows; r++ {
			grow := cur[r*out : (r+1)*out]
			for j, v := range grow {
				p.gb[j] += v
			}
			irow := x[r*in : (r+1)*in]
			for k, v := range irow {
				if v != 0 {
					blas.Saxpy(out, v, grow, 1, p.gw[k*out:(k+1)*out], 1)
				}
			}
		}
	}
	if !needIn {
		return nil
	}
	gin := make([]float32, rows*in)
	for r := 0; r < rows; r++ {
		grow := cur[r*out : (r+1)*out]
		for k := 0; k < in; k++ {
			gin[r*in+k] = blas.Sdot(out, p.w[k*out:(k+1)*out], 1, grow, 1)
		}
	}
	return gin
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
	for bi, br := range n.dense {
		for li, p := range br {
			if p != nil && !n.arch.Branches[bi][li].Frozen {
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
		fc, cv := 0, 0
		in := n.in[bi]
		for li, l := range br {
			switch l.Kind {
			case Dense:
				fc++
				name := fmt.Sprintf("%sfc%d", prefix, fc)
				p := n.dense[bi][li]
				w := append([]float32(nil), p.w...)
				if sh := in[li]; sh.spatial() {
					// Flatten gives ONNX's channel-major order; the trainer's rows are position-major.
					g.Nodes = append(g.Nodes, onnx.Node{Name: name + "_flatten", OpType: "Flatten", Inputs: []string{cur}, Outputs: []string{name + "_flat"},
						Attributes: []onnx.Attribute{onnx.IntAttr("axis", 1)}})
					cur = name + "_flat"
					positions := sh.h * sh.w
					for q := 0; q < positions; q++ {
						for ch := 0; ch < sh.c; ch++ {
							copy(w[(ch*positions+q)*l.Out:(ch*positions+q+1)*l.Out], p.w[(q*sh.c+ch)*l.Out:(q*sh.c+ch+1)*l.Out])
						}
					}
				}
				g.Initializers = append(g.Initializers,
					onnx.FloatTensor(name+".weight", []int64{int64(l.In), int64(l.Out)}, w),
					onnx.FloatTensor(name+".bias", []int64{int64(l.Out)}, append([]float32(nil), p.b...)))
				g.Nodes = append(g.Nodes, onnx.Node{Name: name, OpType: "Gemm",
					Inputs: []string{cur, name + ".weight", name + ".bias"}, Outputs: []string{name + ".out"}})
				cur = name + ".out"
			case Conv:
				cv++
				name := fmt.Sprintf("%sconv%d", prefix, cv)
				if li == 0 {
					shape := prefix + "image_shape"
					g.Initializers = append(g.Initializers, onnx.Int64Tensor(shape, []int64{4}, []int64{-1, 1, fashion.Rows, fashion.Cols}))
					g.Nodes = append(g.Nodes, onnx.Node{Name: prefix + "to_image", OpType: "Reshape", Inputs: []string{cur, shape}, Outputs: []string{prefix + "image"}})
					cur = prefix + "image"
				}
				c, sh := l.Conv, in[li]
				p := n.dense[bi][li]
				k := sh.c * c.K * c.K
				g.Initializers = append(g.Initializers,
					onnx.FloatTensor(name+".weight", []int64{int64(c.Out), int64(sh.c), int64(c.K), int64(c.K)}, transposed(p.w, k, c.Out)),
					onnx.FloatTensor(name+".bias", []int64{int64(c.Out)}, append([]float32(nil), p.b...)))
				pad := int64(c.Pad)
				g.Nodes = append(g.Nodes, onnx.Node{Name: name, OpType: "Conv", Inputs: []string{cur, name + ".weight", name + ".bias"}, Outputs: []string{name + ".out"},
					Attributes: []onnx.Attribute{onnx.IntsAttr("kernel_shape", int64(c.K), int64(c.K)), onnx.IntsAttr("strides", int64(c.Stride), int64(c.Stride)),
						onnx.IntsAttr("pads", pad, pad, pad, pad)}})
				cur = name + ".out"
			case ReLU:
				name := fmt.Sprintf("%srelu%d", prefix, fc)
				if li > 0 && br[li-1].Kind == Conv {
					name = fmt.Sprintf("%sconvrelu%d", prefix, cv)
				}
				g.Nodes = append(g.Nodes, onnx.Node{Name: name, OpType: "Relu", Inputs: []string{cur}, Outputs: []string{name + ".out"}})
				cur = name + ".out"
			case Cos:
				name := fmt.Sprintf("%scos%d", prefix, li)
				g.Nodes = append(g.Nodes, onnx.Node{Name: name, OpType: "Cos", Inputs: []string{cur}, Outputs: []string{name + ".out"}})
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

// transposed returns the [cols×rows] transpose of a [rows×cols] matrix.
func transposed(a []float32, rows, cols int) []float32 {
	t := make([]float32, len(a))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			t[c*rows+r] = a[r*cols+c]
		}
	}
	return t
}

// InputName and OutputName are the tensor names of every bundled model.
const (
	InputName  = "input"
	OutputName = "probs"
)
