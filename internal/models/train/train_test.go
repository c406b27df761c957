package train

import (
	"bytes"
	"context"
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
		if spec.Arch.Name != "logreg" && spec.Arch.Name != "pool-mlp64" && spec.Arch.Name != "branch2" {
			continue // one chain, one pooled front end, one two-branch DAG keep the test quick
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

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"zero epochs", func(c *Config) { c.Epochs = 0 }},
		{"zero batch", func(c *Config) { c.BatchSize = 0 }},
		{"negative lr", func(c *Config) { c.LearningRate = -1 }},
		{"decay above one", func(c *Config) { c.LRDecay = 1.5 }},
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
}
