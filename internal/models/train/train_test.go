package train

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/models/onnx"
)

// stripes is a synthetic, learnable set: class k lights up pixel rows 2k..2k+2 (plus noise).
func stripes(n int) *fashion.Set {
	s := &fashion.Set{Images: make([]byte, n*fashion.Pixels), Labels: make([]uint8, n)}
	for i := 0; i < n; i++ {
		k := i % fashion.NumClasses
		s.Labels[i] = uint8(k)
		img := s.Image(i)
		for p := range img {
			img[p] = byte((i*31 + p*17) % 40)
		}
		for r := 2 * k; r < 2*k+3; r++ {
			for c := 0; c < fashion.Cols; c++ {
				img[r*fashion.Cols+c] = 230
			}
		}
	}
	return s
}

func TestTrainLearnsAndExports(t *testing.T) {
	set := stripes(400)
	cfg := DefaultConfig()
	cfg.Epochs = 3
	for _, spec := range Bundled() {
		if spec.Arch.Name != "logreg" && spec.Arch.Name != "pool-mlp64" && spec.Arch.Name != "branch2" && spec.Arch.Name != "cnn8x16" && spec.Arch.Name != "rff1024" {
			continue // one chain, a pooled front end, a two-branch DAG, a CNN and a random-features model keep the test quick
		}
		t.Run(spec.Arch.Name, func(t *testing.T) {
			res, err := Train(context.Background(), spec.Arch, set, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, meta, err := models.Open(onnx.Marshal(res.Model), models.Options{})
			if err != nil {
				t.Fatalf("open exported model: %v", err)
			}
			if got, want := meta.Params, int64(res.Params); got != want {
				t.Errorf("exported params (-want +got): -%d +%d", want, got)
			}
			acc, _, err := Evaluate(context.Background(), r, set)
			if err != nil {
				t.Fatal(err)
			}
			if acc < 0.9 {
				t.Errorf("training accuracy on a separable set = %.3f, want ≥ 0.9", acc)
			}
		})
	}
}

func TestTrainIsDeterministic(t *testing.T) {
	set := stripes(200)
	cfg := DefaultConfig()
	cfg.Epochs = 1
	arch := Bundled()[2].Arch
	a, err := Train(context.Background(), arch, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(context.Background(), arch, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onnx.Marshal(a.Model), onnx.Marshal(b.Model)) {
		t.Error("two runs with the same seed exported different models")
	}
	cfg.Seed++
	c, err := Train(context.Background(), arch, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(onnx.Marshal(a.Model), onnx.Marshal(c.Model)) {
		t.Error("a different seed exported the same model")
	}
}

func TestBootstrapAndShiftAreDeterministic(t *testing.T) {
	set := stripes(200)
	cfg := DefaultConfig()
	cfg.Epochs = 1
	arch := Bundled()[2].Arch
	plain, err := Train(context.Background(), arch, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Bootstrap, cfg.Shift = true, 1
	a, err := Train(context.Background(), arch, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Train(context.Background(), arch, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onnx.Marshal(a.Model), onnx.Marshal(b.Model)) {
		t.Error("two bagged, shifted runs with the same seed exported different models")
	}
	if bytes.Equal(onnx.Marshal(a.Model), onnx.Marshal(plain.Model)) {
		t.Error("bagging and shifts did not change the model")
	}
}

func TestShifted(t *testing.T) {
	img := make([]byte, fashion.Pixels)
	img[5*fashion.Cols+7] = 255
	tests := []struct {
		name           string
		dy, dx         int
		wantRow, wantC int // -1: the pixel left the image
	}{
		{"none", 0, 0, 5, 7},
		{"down right", 1, 2, 6, 9},
		{"up left", -1, -1, 4, 6},
		{"off the left edge", 0, -8, -1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float32, fashion.Pixels)
			for i := range dst {
				dst[i] = 9 // stale values must be cleared
			}
			shifted(dst, img, tc.dy, tc.dx)
			var lit []int
			for i, v := range dst {
				if v != 0 {
					lit = append(lit, i)
				}
			}
			want := []int{}
			if tc.wantRow >= 0 {
				want = []int{tc.wantRow*fashion.Cols + tc.wantC}
			}
			if len(lit) != len(want) || len(want) == 1 && (lit[0] != want[0] || dst[want[0]] != 1) {
				t.Errorf("lit pixels (-want +got):\n-%v\n+%v", want, lit)
			}
		})
	}
}

func TestAvgPool(t *testing.T) {
	// The trainer's pooling must be ONNX AveragePool's (no padding, floor): window means.
	for _, p := range []PoolShape{{2, 2, 2, 2}, {3, 3, 2, 2}, {1, 28, 1, 1}, {28, 1, 1, 1}, {4, 4, 4, 4}} {
		oh, ow := p.out()
		x := make([]float32, fashion.Pixels)
		for i := range x {
			x[i] = float32(i%13) / 13
		}
		got := avgPool(x, 1, p)
		if len(got) != oh*ow {
			t.Fatalf("pool %+v: %d outputs, want %d", p, len(got), oh*ow)
		}
		// Spot-check the last window by hand.
		var s float32
		for di := 0; di < p.KH; di++ {
			for dj := 0; dj < p.KW; dj++ {
				s += x[((oh-1)*p.SH+di)*fashion.Cols+(ow-1)*p.SW+dj]
			}
		}
		if want := s * (1 / float32(p.KH*p.KW)); got[len(got)-1] != want {
			t.Errorf("pool %+v: last output (-want +got): -%v +%v", p, want, got[len(got)-1])
		}
	}
	if got := avgPool(make([]float32, fashion.Pixels), 1, PoolShape{2, 2, 2, 2}); len(got) != 196 {
		t.Errorf("2×2 pool gives %d values, want 196", len(got))
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"zero epochs", func(c *Config) { c.Epochs = 0 }},
		{"zero batch", func(c *Config) { c.BatchSize = 0 }},
		{"negative lr", func(c *Config) { c.LearningRate = -1 }},
		{"decay above one", func(c *Config) { c.LRDecay = 1.5 }},
		{"negative shift", func(c *Config) { c.Shift = -1 }},
		{"shift above four", func(c *Config) { c.Shift = 5 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			if err := c.Validate(); err == nil {
				t.Errorf("Validate(%+v) = nil, want an error", c)
			}
		})
	}
	for _, s := range Bundled() {
		if err := s.Arch.Validate(); err != nil {
			t.Errorf("bundled arch %s: %v", s.Arch.Name, err)
		}
	}
	bad := []Arch{
		{Name: "pool-late", Branches: [][]Layer{{{Kind: Dense, In: 784, Out: 784}, {Kind: AvgPool, Pool: PoolShape{2, 2, 2, 2}}, {Kind: Dense, In: 196, Out: 10}}}},
		{Name: "pool-zero", Branches: [][]Layer{{{Kind: AvgPool}, {Kind: Dense, In: 1, Out: 10}}}},
		{Name: "pool-width", Branches: [][]Layer{pooled(PoolShape{2, 2, 2, 2}, 64)[:1]}},
	}
	for _, a := range bad {
		if err := a.Validate(); err == nil {
			t.Errorf("arch %s: Validate = nil, want an error", a.Name)
		}
	}
}

// TestExportMatchesTrainer checks that the ONNX export of every layer kind (Conv with its
// position-major → NCHW conversion, fixed filters, random Fourier features) computes what the
// trainer computes: the native runtime's probabilities equal the trainer's softmax.
func TestExportMatchesTrainer(t *testing.T) {
	set := stripes(64)
	cfg := DefaultConfig()
	cfg.Epochs = 1
	for _, name := range []string{"cnn8x16", "hog-mlp128", "rff1024"} {
		t.Run(name, func(t *testing.T) {
			i := slices.IndexFunc(Bundled(), func(s Spec) bool { return s.Arch.Name == name })
			if i < 0 {
				t.Fatalf("no bundled model %q", name)
			}
			arch := Bundled()[i].Arch
			if err := arch.Validate(); err != nil {
				t.Fatal(err)
			}
			n := newNet(arch, rand.New(rand.NewPCG(3, 4)))
			const bs = 5
			x := set.Floats(nil, 0, bs)
			z := logits(n.forward(x, bs))
			r, _, err := models.Open(onnx.Marshal(n.export(nil)), models.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Run(context.Background(), []models.Tensor{{Name: InputName, Shape: []int64{bs, fashion.Pixels}, Data: x}})
			if err != nil {
				t.Fatal(err)
			}
			for row := range bs {
				zr := z[row*10 : (row+1)*10]
				mx := zr[Argmax(zr)]
				var sum float64
				for _, v := range zr {
					sum += math.Exp(float64(v - mx))
				}
				for c, v := range zr {
					want := math.Exp(float64(v-mx)) / sum
					if got := float64(out[0].Data[row*10+c]); math.Abs(got-want) > 1e-4 {
						t.Fatalf("image %d class %d (-want +got): -%.6f +%.6f", row, c, want, got)
					}
				}
			}
		})
	}
}
