package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

// col2im is im2col's adjoint — ⟨im2col(x), y⟩ = ⟨x, col2im(y)⟩ for every x and y — which is what
// makes it the right backward pass of the Conv layers' unfolding, strides and padding included.
func TestCol2imIsAdjointOfIm2col(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		in shape
		cv ConvShape
	}{
		{shape{1, 5, 5}, ConvShape{Out: 1, K: 3, Stride: 1, Pad: 1}},
		{shape{2, 6, 7}, ConvShape{Out: 1, K: 3, Stride: 2, Pad: 0}},
		{shape{3, 4, 4}, ConvShape{Out: 1, K: 2, Stride: 2, Pad: 1}},
	} {
		const bs = 2
		x := make([]float32, bs*c.in.size())
		for i := range x {
			x[i] = rng.Float32() - 0.5
		}
		col := im2col(x, bs, c.in, c.cv)
		y := make([]float32, len(col))
		for i := range y {
			y[i] = rng.Float32() - 0.5
		}
		var lhs, rhs float64
		for i := range col {
			lhs += float64(col[i]) * float64(y[i])
		}
		back := col2im(y, bs, c.in, c.cv)
		for i := range x {
			rhs += float64(x[i]) * float64(back[i])
		}
		if math.Abs(lhs-rhs) > 1e-4 {
			t.Errorf("%+v %+v: ⟨im2col(x), y⟩ = %v, ⟨x, col2im(y)⟩ = %v", c.in, c.cv, lhs, rhs)
		}
	}
}
