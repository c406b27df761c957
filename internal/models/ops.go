package models

//lint:file-ignore ST1005 error strings start with ONNX operator and operand names as the spec spells them (Conv, Gemm's A, B, C)

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas/gonum"

	"github.com/sloserve/sloserve/internal/models/onnx"
)

// blas is gonum's pure-Go BLAS; its Saxpy uses the assembly kernels of gonum's internal f32
// package on amd64 and arm64.
var blas gonum.Implementation

// Block sizes of the native matrix multiply: a kBlock×jBlock panel of B (64×256 float32 = 64 KiB)
// stays in L2 while every row of A streams over it.
const (
	kBlock = 64
	jBlock = 256
)

// compileNode returns the kernel of one node; consts holds the constant (initializer) value of
// each input, or nil for runtime values, so kernels can pre-transform weights once.
func compileNode(nd onnx.Node, consts []*value) (kernel, error) {
	arity := func(lo, hi int) error {
		if len(nd.Inputs) < lo || len(nd.Inputs) > hi {
			return fmt.Errorf("%w: node %q (%s) has %d inputs, want %d..%d", ErrUnsupported, nd.Name, nd.OpType, len(nd.Inputs), lo, hi)
		}
		return nil
	}
	switch nd.OpType {
	case "Gemm":
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		return compileGemm(nd, consts)
	case "MatMul":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		return compileMatMul(consts)
	case "Add", "Sub", "Mul":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		return binaryKernel(nd.OpType), nil
	case "Relu":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return unary(func(x float32) float32 { return max(x, 0) }), nil
	case "Sigmoid":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return unary(func(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }), nil
	case "Tanh":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return unary(func(x float32) float32 { return float32(math.Tanh(float64(x))) }), nil
	case "Cos":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return unary(func(x float32) float32 { return float32(math.Cos(float64(x))) }), nil
	case "Identity":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return unary(func(x float32) float32 { return x }), nil
	case "Softmax":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return softmaxKernel(nd.AttrInt("axis", -1)), nil
	case "Flatten":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return flattenKernel(nd.AttrInt("axis", 1)), nil
	case "Reshape":
		if err := arity(2, 2); err != nil {
			return nil, err
		}
		if nd.AttrInt("allowzero", 0) != 0 {
			return nil, fmt.Errorf("%w: node %q: Reshape allowzero=1", ErrUnsupported, nd.Name)
		}
		return reshapeKernel, nil
	case "AveragePool":
		if err := arity(1, 1); err != nil {
			return nil, err
		}
		return compileAvgPool(nd)
	case "Conv":
		if err := arity(2, 3); err != nil {
			return nil, err
		}
		return compileConv(nd, consts)
	}
	return nil, fmt.Errorf("%w: node %q: operator %s (the native runtime implements %v)", ErrUnsupported, nd.Name, nd.OpType, NativeOps)
}

// matmul computes out[M×N] += a[M×K]·b[K×N] (row-major), blocked over K and N, skipping zero
// elements of a (inputs after ReLU, and image backgrounds, are mostly zeros).
func matmul(out, a, b []float32, m, k, n int) {
	for j0 := 0; j0 < n; j0 += jBlock {
		j1 := min(j0+jBlock, n)
		w := j1 - j0
		for k0 := 0; k0 < k; k0 += kBlock {
			k1 := min(k0+kBlock, k)
			for r := 0; r < m; r++ {
				arow := a[r*k : r*k+k]
				orow := out[r*n+j0 : r*n+j1]
				for kk := k0; kk < k1; kk++ {
					x := arow[kk]
					if x == 0 {
						continue
					}
					blas.Saxpy(w, x, b[kk*n+j0:kk*n+j1], 1, orow, 1)
				}
			}
		}
	}
}

// transpose returns the [cols×rows] transpose of a [rows×cols] matrix.
func transpose(a []float32, rows, cols int) []float32 {
	t := make([]float32, len(a))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			t[c*rows+r] = a[r*cols+c]
		}
	}
	return t
}

// compileGemm implements Gemm (opset 13): Y = alpha·A'·B' + beta·C with A' = transA ? Aᵀ : A and
// likewise B'; C broadcasts unidirectionally to [M×N]. A constant B is stored as [K×N] once.
func compileGemm(nd onnx.Node, consts []*value) (kernel, error) {
	alpha := nd.AttrFloat("alpha", 1)
	beta := nd.AttrFloat("beta", 1)
	transA := nd.AttrInt("transA", 0) != 0
	transB := nd.AttrInt("transB", 0) != 0
	var constB []float32
	var constK, constN int
	if b := consts[1]; b != nil {
		if len(b.shape) != 2 || b.f == nil {
			return nil, fmt.Errorf("%w: node %q: Gemm B has shape %v", ErrUnsupported, nd.Name, b.shape)
		}
		constK, constN = int(b.shape[0]), int(b.shape[1])
		constB = b.f
		if transB {
			constB = transpose(b.f, constK, constN)
			constK, constN = constN, constK
		}
	}
	return func(in []*value) (*value, error) {
		a := in[0]
		if len(a.shape) != 2 || !isFloat(a) {
			return nil, fmt.Errorf("A has shape %v, want a 2-D float tensor", a.shape)
		}
		m, k := int(a.shape[0]), int(a.shape[1])
		af := a.f
		if transA {
			af = transpose(a.f, m, k)
			m, k = k, m
		}
		bf, bk, n := constB, constK, constN
		if bf == nil {
			b := in[1]
			if len(b.shape) != 2 || !isFloat(b) {
				return nil, fmt.Errorf("B has shape %v, want a 2-D float tensor", b.shape)
			}
			bk, n = int(b.shape[0]), int(b.shape[1])
			bf = b.f
			if transB {
				bf = transpose(b.f, bk, n)
				bk, n = n, bk
			}
		}
		if bk != k {
			return nil, fmt.Errorf("A is [%d×%d] but B is [%d×%d]", m, k, bk, n)
		}
		out := make([]float32, m*n)
		matmul(out, af, bf, m, k, n)
		if alpha != 1 {
			for i := range out {
				out[i] *= alpha
			}
		}
		if len(in) == 3 && in[2] != nil && beta != 0 {
			c := in[2]
			if !isFloat(c) {
				return nil, fmt.Errorf("C is not a float tensor")
			}
			if err := addBroadcast(out, []int64{int64(m), int64(n)}, c, beta); err != nil {
				return nil, fmt.Errorf("C: %w", err)
			}
		}
		return &value{shape: []int64{int64(m), int64(n)}, f: out}, nil
	}, nil
}

// addBroadcast adds scale·c to out (shape oshape), c broadcasting to oshape by NumPy rules.
func addBroadcast(out []float32, oshape []int64, c *value, scale float32) error {
	cs := c.shape
	if len(cs) > len(oshape) {
		return fmt.Errorf("shape %v does not broadcast to %v", cs, oshape)
	}
	// Fast path: c matches a suffix of oshape exactly (a bias vector or a same-shape tensor).
	suffix := true
	off := len(oshape) - len(cs)
	for i, d := range cs {
		if d != oshape[off+i] {
			suffix = false
		}
	}
	if suffix {
		cn := len(c.f)
		if cn == 0 {
			return nil
		}
		for base := 0; base < len(out); base += cn {
			o := out[base : base+cn]
			if scale == 1 {
				for i, v := range c.f[:len(o)] {
					o[i] += v
				}
			} else {
				blas.Saxpy(cn, scale, c.f, 1, o, 1)
			}
		}
		return nil
	}
	return broadcastApply(out, oshape, c, func(o *float32, v float32) { *o += scale * v })
}

// broadcastApply calls fn(&out[i], c[j]) for every element of out with j the broadcast index of
// c (which must broadcast to oshape).
func broadcastApply(out []float32, oshape []int64, c *value, fn func(o *float32, v float32)) error {
	rank := len(oshape)
	cstr := make([]int, rank)
	stride := 1
	for i := rank - 1; i >= 0; i-- {
		ci := i - (rank - len(c.shape))
		if ci < 0 {
			continue
		}
		switch d := c.shape[ci]; {
		case d == oshape[i]:
			cstr[i] = stride
		case d == 1:
			cstr[i] = 0
		default:
			return fmt.Errorf("shape %v does not broadcast to %v", c.shape, oshape)
		}
		stride *= int(c.shape[ci])
	}
	idx := make([]int64, rank)
	for i := range out {
		j := 0
		for d := 0; d < rank; d++ {
			j += int(idx[d]) * cstr[d]
		}
		fn(&out[i], c.f[j])
		for d := rank - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < oshape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return nil
}

// broadcastShape returns the NumPy broadcast of two shapes.
func broadcastShape(a, b []int64) ([]int64, error) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for i := 0; i < n; i++ {
		da, db := int64(1), int64(1)
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast", a, b)
		}
	}
	return out, nil
}

// binaryKernel implements the broadcasting element-wise Add, Sub and Mul.
func binaryKernel(op string) kernel {
	var f func(x, y float32) float32
	switch op {
	case "Add":
		f = func(x, y float32) float32 { return x + y }
	case "Sub":
		f = func(x, y float32) float32 { return x - y }
	default:
		f = func(x, y float32) float32 { return x * y }
	}
	return func(in []*value) (*value, error) {
		a, b := in[0], in[1]
		if !isFloat(a) || !isFloat(b) {
			return nil, fmt.Errorf("%s of non-float tensors", op)
		}
		shape, err := broadcastShape(a.shape, b.shape)
		if err != nil {
			return nil, err
		}
		out := &value{shape: shape}
		out.f = make([]float32, out.numel())
		if op == "Add" && len(a.f) == len(out.f) {
			copy(out.f, a.f)
			return out, addBroadcast(out.f, shape, b, 1)
		}
		// General path: broadcast a into out, then combine with b element-wise.
		if err := broadcastApply(out.f, shape, a, func(o *float32, v float32) { *o = v }); err != nil {
			return nil, err
		}
		err = broadcastApply(out.f, shape, b, func(o *float32, v float32) { *o = f(*o, v) })
		return out, err
	}
}

// unary applies f element-wise.
func unary(f func(float32) float32) kernel {
	return func(in []*value) (*value, error) {
		x := in[0]
		if !isFloat(x) {
			return nil, fmt.Errorf("non-float input")
		}
		out := make([]float32, len(x.f))
		for i, v := range x.f {
			out[i] = f(v)
		}
		return &value{shape: append([]int64(nil), x.shape...), f: out}, nil
	}
}

// normAxis maps a possibly negative axis into [0, rank) (or [0, rank] when inclusive).
func normAxis(axis int64, rank int, inclusive bool) (int, error) {
	hi := int64(rank)
	if !inclusive {
		hi--
	}
	if axis < 0 {
		axis += int64(rank)
	}
	if axis < 0 || axis > hi {
		return 0, fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	return int(axis), nil
}

// softmaxKernel implements Softmax (opset 13: along one axis, default -1), max-subtracted.
func softmaxKernel(axis int64) kernel {
	return func(in []*value) (*value, error) {
		x := in[0]
		if !isFloat(x) {
			return nil, fmt.Errorf("non-float input")
		}
		ax, err := normAxis(axis, len(x.shape), false)
		if err != nil {
			return nil, err
		}
		outer, dim, inner := 1, int(x.shape[ax]), 1
		for i := 0; i < ax; i++ {
			outer *= int(x.shape[i])
		}
		for i := ax + 1; i < len(x.shape); i++ {
			inner *= int(x.shape[i])
		}
		out := make([]float32, len(x.f))
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				base := o*dim*inner + i
				mx := float32(math.Inf(-1))
				for d := 0; d < dim; d++ {
					mx = max(mx, x.f[base+d*inner])
				}
				var sum float64
				for d := 0; d < dim; d++ {
					e := math.Exp(float64(x.f[base+d*inner] - mx))
					out[base+d*inner] = float32(e)
					sum += e
				}
				for d := 0; d < dim; d++ {
					out[base+d*inner] = float32(float64(out[base+d*inner]) / sum)
				}
			}
		}
		return &value{shape: append([]int64(nil), x.shape...), f: out}, nil
	}
}

// flattenKernel implements Flatten: [d0..d(axis-1)] × [d(axis)..] as a 2-D view.
func flattenKernel(axis int64) kernel {
	return func(in []*value) (*value, error) {
		x := in[0]
		ax, err := normAxis(axis, len(x.shape), true)
		if err != nil {
			return nil, err
		}
		a, b := int64(1), int64(1)
		for i, d := range x.shape {
			if i < ax {
				a *= d
			} else {
				b *= d
			}
		}
		return &value{shape: []int64{a, b}, f: x.f, i: x.i}, nil
	}
}

// reshapeKernel implements Reshape (opset 13, allowzero = 0): 0 copies the input dimension,
// one -1 is inferred.
func reshapeKernel(in []*value) (*value, error) {
	x, s := in[0], in[1]
	if s.i == nil && s.numel() != 0 {
		return nil, fmt.Errorf("shape input must be INT64")
	}
	n := int64(x.numel())
	shape := make([]int64, len(s.i))
	infer := -1
	known := int64(1)
	for i, d := range s.i {
		switch {
		case d == 0:
			if i >= len(x.shape) {
				return nil, fmt.Errorf("shape %v copies dimension %d of a rank-%d input", s.i, i, len(x.shape))
			}
			shape[i] = x.shape[i]
		case d == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("shape %v has two -1", s.i)
			}
			infer = i
			continue
		case d < 0:
			return nil, fmt.Errorf("shape %v has dimension %d", s.i, d)
		case d > n:
			return nil, fmt.Errorf("cannot reshape %v to %v", x.shape, s.i)
		default:
			shape[i] = d
		}
		known *= shape[i]
	}
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return nil, fmt.Errorf("cannot reshape %v to %v", x.shape, s.i)
		}
		shape[infer] = n / known
	} else if known != n {
		return nil, fmt.Errorf("cannot reshape %v to %v", x.shape, s.i)
	}
	return &value{shape: shape, f: x.f, i: x.i}, nil
}

// compileAvgPool implements 2-D AveragePool on NCHW without padding (pads must be zero,
// ceil_mode 0): each output is the mean of its kernel window.
func compileAvgPool(nd onnx.Node) (kernel, error) {
	ks := nd.AttrInts("kernel_shape")
	if len(ks) != 2 {
		return nil, fmt.Errorf("%w: node %q: AveragePool kernel_shape %v, want 2-D", ErrUnsupported, nd.Name, ks)
	}
	st := nd.AttrInts("strides")
	if st == nil {
		st = []int64{1, 1}
	}
	for _, p := range nd.AttrInts("pads") {
		if p != 0 {
			return nil, fmt.Errorf("%w: node %q: AveragePool with padding", ErrUnsupported, nd.Name)
		}
	}
	if nd.AttrInt("ceil_mode", 0) != 0 || len(st) != 2 || st[0] <= 0 || st[1] <= 0 || ks[0] <= 0 || ks[1] <= 0 {
		return nil, fmt.Errorf("%w: node %q: AveragePool kernel %v strides %v ceil_mode %d", ErrUnsupported, nd.Name, ks, st, nd.AttrInt("ceil_mode", 0))
	}
	kh, kw, sh, sw := int(ks[0]), int(ks[1]), int(st[0]), int(st[1])
	inv := 1 / float32(kh*kw)
	return func(in []*value) (*value, error) {
		x := in[0]
		if len(x.shape) != 4 || !isFloat(x) {
			return nil, fmt.Errorf("input has shape %v, want a float NCHW tensor", x.shape)
		}
		nc, h, w := int(x.shape[0]*x.shape[1]), int(x.shape[2]), int(x.shape[3])
		if h < kh || w < kw {
			return nil, fmt.Errorf("input %v smaller than kernel %v", x.shape, ks)
		}
		oh, ow := (h-kh)/sh+1, (w-kw)/sw+1
		out := make([]float32, nc*oh*ow)
		for c := 0; c < nc; c++ {
			src := x.f[c*h*w : (c+1)*h*w]
			dst := out[c*oh*ow : (c+1)*oh*ow]
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					var s float32
					for di := 0; di < kh; di++ {
						row := src[(i*sh+di)*w+j*sw:]
						for dj := 0; dj < kw; dj++ {
							s += row[dj]
						}
					}
					dst[i*ow+j] = s * inv
				}
			}
		}
		return &value{shape: []int64{x.shape[0], x.shape[1], int64(oh), int64(ow)}, f: out}, nil
	}, nil
}

// compileMatMul implements MatMul for a 2-D (or higher, flattened over leading dimensions)
// A times a 2-D B.
func compileMatMul(consts []*value) (kernel, error) {
	return func(in []*value) (*value, error) {
		a, b := in[0], in[1]
		if len(a.shape) < 2 || len(b.shape) != 2 || !isFloat(a) || !isFloat(b) {
			return nil, fmt.Errorf("%w: MatMul of shapes %v and %v (B must be 2-D)", ErrUnsupported, a.shape, b.shape)
		}
		k := int(a.shape[len(a.shape)-1])
		m := len(a.f) / max(k, 1)
		if int(b.shape[0]) != k {
			return nil, fmt.Errorf("MatMul of shapes %v and %v", a.shape, b.shape)
		}
		n := int(b.shape[1])
		out := make([]float32, m*n)
		matmul(out, a.f, b.f, m, k, n)
		shape := append(append([]int64(nil), a.shape[:len(a.shape)-1]...), int64(n))
		return &value{shape: shape, f: out}, nil
	}, nil
}

// isFloat reports whether v is a float tensor whose data length matches its shape.
func isFloat(v *value) bool {
	n := 1
	for _, d := range v.shape {
		if d < 0 {
			return false
		}
		n *= int(d)
	}
	return v.f != nil && len(v.f) == n || n == 0 && v.i == nil
}

// compileConv implements 2-D Conv (opset 11) on NCHW with group 1 and dilations 1: X [N×C×H×W],
// W [M×C×kH×kW], optional B [M], explicit pads [top, left, bottom, right] (auto_pad NOTSET).
// Each image is unfolded into a [C·kH·kW×P] patch matrix (P = OH·OW output positions, one row
// per kernel tap) and W [M×C·kH·kW] times it gives the image's [M×P] output directly in NCHW
// order: M·C·kH·kW vector updates of length P, long even for the few filters of small nets
// (zero weights, such as fixed per-channel filters, are skipped).
func compileConv(nd onnx.Node, consts []*value) (kernel, error) {
	if g := nd.AttrInt("group", 1); g != 1 {
		return nil, fmt.Errorf("%w: node %q: Conv group %d", ErrUnsupported, nd.Name, g)
	}
	for _, d := range nd.AttrInts("dilations") {
		if d != 1 {
			return nil, fmt.Errorf("%w: node %q: Conv dilations %v", ErrUnsupported, nd.Name, nd.AttrInts("dilations"))
		}
	}
	if a, ok := nd.Attr("auto_pad"); ok && a.S != "" && a.S != "NOTSET" {
		return nil, fmt.Errorf("%w: node %q: Conv auto_pad %s", ErrUnsupported, nd.Name, a.S)
	}
	st := nd.AttrInts("strides")
	if st == nil {
		st = []int64{1, 1}
	}
	pads := nd.AttrInts("pads")
	if pads == nil {
		pads = []int64{0, 0, 0, 0}
	}
	if len(st) != 2 || st[0] <= 0 || st[1] <= 0 || len(pads) != 4 || slices.ContainsFunc(pads, func(p int64) bool { return p < 0 }) {
		return nil, fmt.Errorf("%w: node %q: Conv strides %v pads %v, want 2-D", ErrUnsupported, nd.Name, st, pads)
	}
	sh, sw := int(st[0]), int(st[1])
	pt, pl, pb, pr := int(pads[0]), int(pads[1]), int(pads[2]), int(pads[3])
	ks := nd.AttrInts("kernel_shape")
	checkW := func(w *value) error {
		if len(w.shape) != 4 || !isFloat(w) {
			return fmt.Errorf("Conv weight has shape %v, want [M×C×kH×kW]", w.shape)
		}
		if ks != nil && (len(ks) != 2 || ks[0] != w.shape[2] || ks[1] != w.shape[3]) {
			return fmt.Errorf("Conv kernel_shape %v does not match weight %v", ks, w.shape)
		}
		return nil
	}
	if w := consts[1]; w != nil {
		if err := checkW(w); err != nil {
			return nil, fmt.Errorf("%w: node %q: %v", ErrUnsupported, nd.Name, err)
		}
	}
	return func(in []*value) (*value, error) {
		x, w := in[0], in[1]
		if len(x.shape) != 4 || !isFloat(x) {
			return nil, fmt.Errorf("Conv input has shape %v, want a float NCHW tensor", x.shape)
		}
		if len(w.shape) != 4 || w.shape[1] != x.shape[1] {
			return nil, fmt.Errorf("Conv weight %v does not match input %v", w.shape, x.shape)
		}
		if err := checkW(w); err != nil {
			return nil, err
		}
		n, c, h, wd := int(x.shape[0]), int(x.shape[1]), int(x.shape[2]), int(x.shape[3])
		m, kh, kw := int(w.shape[0]), int(w.shape[2]), int(w.shape[3])
		oh, ow := (h+pt+pb-kh)/sh+1, (wd+pl+pr-kw)/sw+1
		if oh < 1 || ow < 1 {
			return nil, fmt.Errorf("Conv input %v smaller than kernel %v", x.shape, w.shape)
		}
		var bias []float32
		if len(in) > 2 && in[2] != nil {
			if b := in[2]; !isFloat(b) || len(b.f) != m {
				return nil, fmt.Errorf("Conv bias has shape %v, want [%d]", b.shape, m)
			}
			bias = in[2].f
		}
		p, k := oh*ow, c*kh*kw
		col := make([]float32, k*p)
		out := make([]float32, n*m*p)
		for img := 0; img < n; img++ {
			src := x.f[img*c*h*wd : (img+1)*c*h*wd]
			clear(col)
			for ch := 0; ch < c; ch++ {
				for di := 0; di < kh; di++ {
					for dj := 0; dj < kw; dj++ {
						row := col[((ch*kh+di)*kw+dj)*p:]
						for i := 0; i < oh; i++ {
							y := i*sh + di - pt
							if y < 0 || y >= h {
								continue
							}
							for j := 0; j < ow; j++ {
								if xx := j*sw + dj - pl; xx >= 0 && xx < wd {
									row[i*ow+j] = src[(ch*h+y)*wd+xx]
								}
							}
						}
					}
				}
			}
			dst := out[img*m*p : (img+1)*m*p]
			if bias != nil {
				for o := 0; o < m; o++ {
					for q := range p {
						dst[o*p+q] = bias[o]
					}
				}
			}
			matmul(dst, w.f, col, m, k, p)
		}
		return &value{shape: []int64{int64(n), int64(m), int64(oh), int64(ow)}, f: out}, nil
	}, nil
}
