package train

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/models/onnx"
)

// Config is one training run's hyper-parameters.
type Config struct {
	// Seed seeds weight initialisation and shuffling; equal seeds give bit-identical models.
	Seed uint64
	// Epochs is the number of passes over the training set (≥ 1).
	Epochs int
	// BatchSize is the mini-batch size (images, ≥ 1).
	BatchSize int
	// LearningRate is Adam's step size for the first epoch (> 0).
	LearningRate float64
	// LRDecay multiplies the learning rate after every epoch (0 < LRDecay ≤ 1).
	LRDecay float64
	// Bootstrap trains on one bootstrap resample of the training set (as many images, drawn with
	// replacement, Breiman's bagging) instead of the set itself: members trained on different
	// resamples make less correlated errors.
	Bootstrap bool
	// Shift translates each training image by a random whole number of pixels in [−Shift, Shift]
	// along each axis (zero fill) every time it is used: a cheap augmentation that also
	// decorrelates members; 0 disables it, at most 4.
	Shift int
	// Log receives one progress line per epoch; nil discards them.
	Log io.Writer
}

// DefaultConfig returns the configuration of the bundled models: Adam (lr 2e-3, β = 0.9/0.999),
// batches of 64, lr ×0.6 per epoch, 4 epochs, seed 1.
func DefaultConfig() Config {
	return Config{Seed: 1, Epochs: 4, BatchSize: 64, LearningRate: 2e-3, LRDecay: 0.6}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("train config: Epochs %d must be ≥ 1", c.Epochs)
	case c.BatchSize < 1:
		return fmt.Errorf("train config: BatchSize %d must be ≥ 1", c.BatchSize)
	case !(c.LearningRate > 0):
		return fmt.Errorf("train config: LearningRate %v must be > 0", c.LearningRate)
	case !(c.LRDecay > 0 && c.LRDecay <= 1):
		return fmt.Errorf("train config: LRDecay %v must be in (0, 1]", c.LRDecay)
	case c.Shift < 0 || c.Shift > 4:
		return fmt.Errorf("train config: Shift %d must be in [0, 4]", c.Shift)
	}
	return nil
}

// Result is a trained model exported to ONNX.
type Result struct {
	Model     *onnx.Model
	Params    int
	FinalLoss float64 // mean cross-entropy over the last epoch
	Elapsed   time.Duration
}

// Train trains arch on set with mini-batch Adam, single-threaded so the result depends only on
// (arch, set, cfg); it stops early with ctx's error.
func Train(ctx context.Context, arch Arch, set *fashion.Set, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := arch.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5105e7e))
	n := newNet(arch, rng)
	order := make([]int, set.Len())
	for i := range order {
		order[i] = i
	}
	if cfg.Bootstrap {
		// Its own stream, so bagging does not change the initial weights drawn above.
		brng := rand.New(rand.NewPCG(cfg.Seed, 0xba66))
		for i := range order {
			order[i] = brng.IntN(len(order))
		}
	}
	x := make([]float32, cfg.BatchSize*fashion.Pixels)
	labels := make([]uint8, cfg.BatchSize)
	lr := cfg.LearningRate
	step := 0
	var lastLoss float64
	for ep := 0; ep < cfg.Epochs; ep++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var loss float64
		for b0 := 0; b0 < len(order); b0 += cfg.BatchSize {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			bs := min(cfg.BatchSize, len(order)-b0)
			for r := 0; r < bs; r++ {
				idx := order[b0+r]
				dst := x[r*fashion.Pixels : (r+1)*fashion.Pixels]
				if cfg.Shift == 0 {
					for p, v := range set.Image(idx) {
						dst[p] = float32(v) / 255
					}
				} else {
					dy, dx := rng.IntN(2*cfg.Shift+1)-cfg.Shift, rng.IntN(2*cfg.Shift+1)-cfg.Shift
					shifted(dst, set.Image(idx), dy, dx)
				}
				labels[r] = set.Labels[idx]
			}
			acts := n.forward(x[:bs*fashion.Pixels], bs)
			z := logits(acts)
			loss += softmaxGrad(z, labels[:bs])
			n.backward(acts, z, bs)
			step++
			n.adamStep(lr, step)
		}
		lastLoss = loss / float64(len(order))
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "train %s: epoch %d/%d loss %.4f lr %.2g (%s)\n", arch.Name, ep+1, cfg.Epochs, lastLoss, lr, time.Since(start).Round(time.Second))
		}
		lr *= cfg.LRDecay
	}
	meta := map[string]string{
		"sloserve.arch":   arch.Name,
		"sloserve.seed":   fmt.Sprint(cfg.Seed),
		"sloserve.epochs": fmt.Sprint(cfg.Epochs),
		"sloserve.input":  "pixel/255, row-major 28x28",
	}
	if cfg.Bootstrap {
		meta["sloserve.bootstrap"] = "true"
	}
	if cfg.Shift > 0 {
		meta["sloserve.shift"] = fmt.Sprint(cfg.Shift)
	}
	return &Result{Model: n.export(meta), Params: n.params(), FinalLoss: lastLoss, Elapsed: time.Since(start)}, nil
}

// shifted writes img/255 translated by (dy, dx) pixels into dst, zero-filling what moves in.
func shifted(dst []float32, img []byte, dy, dx int) {
	clear(dst)
	for r := max(0, dy); r < min(fashion.Rows, fashion.Rows+dy); r++ {
		src := img[(r-dy)*fashion.Cols:]
		row := dst[r*fashion.Cols:]
		for c := max(0, dx); c < min(fashion.Cols, fashion.Cols+dx); c++ {
			row[c] = float32(src[c-dx]) / 255
		}
	}
}
