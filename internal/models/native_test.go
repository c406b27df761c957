package models

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/sloserve/sloserve/internal/models/onnx"
)

// graphModel wraps nodes into a model with one input x [N×cols] and one output y.
func graphModel(cols int64, outCols int64, nodes []onnx.Node, inits ...onnx.Tensor) []byte {
	return onnx.Marshal(&onnx.Model{Graph: onnx.Graph{
		Name:         "t",
		Nodes:        nodes,
		Initializers: inits,
		Inputs:       []onnx.ValueInfo{{Name: "x", ElemType: onnx.Float, Shape: []onnx.Dim{{Param: "N"}, {Value: cols}}}},
		Outputs:      []onnx.ValueInfo{{Name: "y", ElemType: onnx.Float, Shape: []onnx.Dim{{Param: "N"}, {Value: outCols}}}},
	}})
}

func node(op string, in []string, out string, attrs ...onnx.Attribute) onnx.Node {
	return onnx.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attributes: attrs}
}

func assertClose(t *testing.T, want, got []float32, tol float64) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("length (-want +got): -%d +%d", len(want), len(got))
	}
	for i := range want {
		if math.Abs(float64(want[i]-got[i])) > tol {
			t.Fatalf("element %d (-want +got): -%v +%v\nwant %v\ngot  %v", i, want[i], got[i], want, got)
		}
	}
}

// opCase is one operator test: a model, one input, and the expected output.
type opCase struct {
	name    string
	model   []byte
	in      []float32
	inShape []int64
	want    []float32
}

func operatorCases() []opCase {
	w := onnx.FloatTensor("w", []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	wT := onnx.FloatTensor("w", []int64{2, 3}, []float32{1, 3, 5, 2, 4, 6})
	b := onnx.FloatTensor("b", []int64{2}, []float32{0.5, -100})
	x := []float32{1, 0, -1, 2, 1, 0} // two rows of 3
	return []opCase{
		{"gemm", graphModel(3, 2, []onnx.Node{node("Gemm", []string{"x", "w", "b"}, "y")}, w, b),
			x, []int64{2, 3}, []float32{1 - 5 + 0.5, 2 - 6 - 100, 2 + 3 + 0.5, 4 + 4 - 100}},
		{"gemm transB alpha beta", graphModel(3, 2, []onnx.Node{node("Gemm", []string{"x", "w", "b"}, "y",
			onnx.IntAttr("transB", 1), onnx.FloatAttr("alpha", 2), onnx.FloatAttr("beta", 0.5))}, wT, b),
			x, []int64{2, 3}, []float32{2*(1-5) + 0.25, 2*(2-6) - 50, 2*(2+3) + 0.25, 2*(4+4) - 50}},
		{"matmul add relu", graphModel(3, 2, []onnx.Node{
			node("MatMul", []string{"x", "w"}, "m"), node("Add", []string{"m", "b"}, "a"), node("Relu", []string{"a"}, "y")}, w, b),
			x, []int64{2, 3}, []float32{0, 0, 5.5, 0}},
		{"softmax", graphModel(2, 2, []onnx.Node{node("Softmax", []string{"x"}, "y", onnx.IntAttr("axis", -1))}),
			[]float32{0, 0, 1, 3}, []int64{2, 2}, []float32{0.5, 0.5, float32(1 / (1 + math.Exp(2))), float32(1 / (1 + math.Exp(-2)))}},
		{"sub mul broadcast", graphModel(2, 2, []onnx.Node{node("Sub", []string{"x", "b"}, "s"), node("Mul", []string{"s", "b"}, "y")}, b),
			[]float32{1, 1, 2, 2}, []int64{2, 2}, []float32{0.25, -10100, 0.75, -10200}},
		{"reshape pool flatten", graphModel(16, 4, []onnx.Node{
			node("Reshape", []string{"x", "shape"}, "img"),
			node("AveragePool", []string{"img"}, "pool", onnx.IntsAttr("kernel_shape", 2, 2), onnx.IntsAttr("strides", 2, 2)),
			node("Flatten", []string{"pool"}, "y", onnx.IntAttr("axis", 1))},
			onnx.Int64Tensor("shape", []int64{4}, []int64{-1, 1, 4, 4})),
			[]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, []int64{1, 16}, []float32{3.5, 5.5, 11.5, 13.5}},
		// Conv: 1×1×3×3 input, two 2×2 filters, stride 1, pad 1 on top/left only → 3×3 outputs.
		{"reshape conv pads bias", graphModel(9, 18, []onnx.Node{
			node("Reshape", []string{"x", "shape"}, "img"),
			node("Conv", []string{"img", "cw", "cb"}, "conv", onnx.IntsAttr("kernel_shape", 2, 2), onnx.IntsAttr("pads", 1, 1, 0, 0)),
			node("Flatten", []string{"conv"}, "y", onnx.IntAttr("axis", 1))},
			onnx.Int64Tensor("shape", []int64{4}, []int64{-1, 1, 3, 3}),
			onnx.FloatTensor("cw", []int64{2, 1, 2, 2}, []float32{1, 0, 0, 0, 1, 1, 1, 1}),
			onnx.FloatTensor("cb", []int64{2}, []float32{0, 0.5})),
			[]float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, []int64{1, 9},
			// filter 0 picks the window's top-left pixel (zero in the padding); filter 1 sums it.
			[]float32{0, 0, 0, 0, 1, 2, 0, 4, 5,
				1.5, 3.5, 5.5, 5.5, 12.5, 16.5, 11.5, 24.5, 28.5}},
		{"conv stride 2 two channels", graphModel(8, 1, []onnx.Node{
			node("Reshape", []string{"x", "shape"}, "img"),
			node("Conv", []string{"img", "cw"}, "conv", onnx.IntsAttr("strides", 2, 2)),
			node("Flatten", []string{"conv"}, "y", onnx.IntAttr("axis", 1))},
			onnx.Int64Tensor("shape", []int64{4}, []int64{-1, 2, 2, 2}),
			onnx.FloatTensor("cw", []int64{1, 2, 1, 1}, []float32{1, -1})),
			[]float32{1, 2, 3, 4, 10, 20, 30, 40, 5, 5, 5, 5, 1, 1, 1, 1}, []int64{2, 8},
			// 1×1 kernel, stride 2 on 2×2 → one output per image: channel 0 − channel 1 at (0,0).
			[]float32{-9, 4}},
		{"cos", graphModel(2, 2, []onnx.Node{node("Cos", []string{"x"}, "y")}),
			[]float32{0, math.Pi}, []int64{1, 2}, []float32{1, -1}},
		{"sigmoid tanh identity", graphModel(2, 2, []onnx.Node{node("Sigmoid", []string{"x"}, "s"), node("Tanh", []string{"s"}, "t"), node("Identity", []string{"t"}, "y")}),
			[]float32{0, 100}, []int64{1, 2}, []float32{float32(math.Tanh(0.5)), float32(math.Tanh(1))}},
	}
}

// TestOperators runs every operator case on both runtimes (onnxruntime skips when unavailable),
// so the native interpreter is checked against hand-computed values and against ONNX Runtime.
func TestOperators(t *testing.T) {
	for _, rt := range Runtimes {
		for _, tc := range operatorCases() {
			t.Run(rt+"/"+tc.name, func(t *testing.T) {
				runCase(t, rt, tc)
			})
		}
	}
}

func runCase(t *testing.T, rt string, tc opCase) {
	t.Helper()
	r, meta, err := Open(tc.model, Options{Runtime: rt})
	if errors.Is(err, ErrRuntimeUnavailable) {
		t.Skipf("runtime %s unavailable: %v", rt, err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer r.Close()
	out, err := r.Run(context.Background(), []Tensor{{Name: meta.Inputs[0].Name, Shape: tc.inShape, Data: tc.in}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertClose(t, tc.want, out[0].Data, 1e-5)
}

func TestNativeBlockedMatmulMatchesNaive(t *testing.T) {
	const m, k, n = 5, 300, 700 // spans several K and N blocks
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	for i := range a {
		a[i] = float32((i*7)%13) - 6
	}
	for i := range b {
		b[i] = float32((i*5)%11)/10 - 0.5
	}
	got := make([]float32, m*n)
	matmul(got, a, b, m, k, n)
	want := make([]float32, m*n)
	for r := 0; r < m; r++ {
		for c := 0; c < n; c++ {
			var s float64
			for j := 0; j < k; j++ {
				s += float64(a[r*k+j]) * float64(b[j*n+c])
			}
			want[r*n+c] = float32(s)
		}
	}
	assertClose(t, want, got, 1e-3)
}

func TestOpenAndRunErrors(t *testing.T) {
	w := onnx.FloatTensor("w", []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	good := graphModel(3, 2, []onnx.Node{node("Gemm", []string{"x", "w"}, "y")}, w)
	t.Run("unsupported operator", func(t *testing.T) {
		_, _, err := Open(graphModel(3, 3, []onnx.Node{node("Conv", []string{"x"}, "y")}), Options{})
		if !errors.Is(err, ErrUnsupported) {
			t.Errorf("Open error = %v, want ErrUnsupported", err)
		}
	})
	t.Run("bad runtime option", func(t *testing.T) {
		if _, _, err := Open(good, Options{Runtime: "tpu"}); err == nil {
			t.Error("Open with Runtime tpu succeeded")
		}
	})
	t.Run("malformed bytes", func(t *testing.T) {
		if _, _, err := Open([]byte("not onnx"), Options{}); !errors.Is(err, onnx.ErrMalformed) {
			t.Errorf("Open error = %v, want onnx.ErrMalformed", err)
		}
	})
	r, _, err := Open(good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		in   []Tensor
	}{
		{"no inputs", nil},
		{"wrong name", []Tensor{{Name: "z", Shape: []int64{1, 3}, Data: make([]float32, 3)}}},
		{"wrong width", []Tensor{{Shape: []int64{1, 4}, Data: make([]float32, 4)}}},
		{"short data", []Tensor{{Shape: []int64{2, 3}, Data: make([]float32, 5)}}},
		{"zero batch", []Tensor{{Shape: []int64{0, 3}}}},
		{"rank 1", []Tensor{{Shape: []int64{3}, Data: make([]float32, 3)}}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := r.Run(context.Background(), tc.in); !errors.Is(err, ErrBadInput) {
				t.Errorf("Run error = %v, want ErrBadInput", err)
			}
		})
	}
}

func TestRunProfiledTimesEveryNode(t *testing.T) {
	w := onnx.FloatTensor("w", []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	r, _, err := Open(graphModel(3, 2, []onnx.Node{node("Gemm", []string{"x", "w"}, "g"), node("Relu", []string{"g"}, "y")}, w), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := r.(OperatorProfiler)
	if !ok {
		t.Fatal("native runner does not implement OperatorProfiler")
	}
	_, times, err := p.RunProfiled(context.Background(), []Tensor{{Shape: []int64{1, 3}, Data: []float32{1, 2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, nt := range times {
		ops = append(ops, nt.OpType)
	}
	if got, want := len(ops), 2; got != want || ops[0] != "Gemm" || ops[1] != "Relu" {
		t.Errorf("profiled ops (-want +got): -[Gemm Relu] +%v", ops)
	}
}

// FuzzNativeOpen checks that no decodable model makes Open or Run panic.
func FuzzNativeOpen(f *testing.F) {
	w := onnx.FloatTensor("w", []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	f.Add(graphModel(3, 2, []onnx.Node{node("Gemm", []string{"x", "w"}, "g"), node("Softmax", []string{"g"}, "y")}, w))
	f.Add(graphModel(16, 4, []onnx.Node{node("Reshape", []string{"x", "s"}, "i"), node("AveragePool", []string{"i"}, "y", onnx.IntsAttr("kernel_shape", 2, 2))},
		onnx.Int64Tensor("s", []int64{4}, []int64{-1, 1, 4, 4})))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, meta, err := Open(b, Options{})
		if err != nil {
			return
		}
		in := make([]Tensor, len(meta.Inputs))
		for i, ti := range meta.Inputs {
			shape := make([]int64, len(ti.Shape))
			n := int64(1)
			for d, v := range ti.Shape {
				shape[d] = max(v, 1)
				n *= shape[d]
			}
			if n > 1<<16 {
				return
			}
			in[i] = Tensor{Name: ti.Name, Shape: shape, Data: make([]float32, n)}
		}
		_, _ = r.Run(context.Background(), in)
	})
}
