package train

import "math"

// mlp returns a single-branch ReLU network 784 → hidden… → 10.
func mlp(hidden ...int) [][]Layer {
	var br []Layer
	in := 784
	for _, h := range hidden {
		br = append(br, Layer{Kind: Dense, In: in, Out: h}, Layer{Kind: ReLU})
		in = h
	}
	return [][]Layer{append(br, Layer{Kind: Dense, In: in, Out: 10})}
}

// Spec is one bundled model: its architecture, its epoch count (bigger nets need fewer passes
// to reach their plateau; total training stays in minutes on two cores) and its serving role.
type Spec struct {
	Arch   Arch
	Epochs int
	// Role is "small", "medium" or "large" for the three serving models, else "".
	Role string
	// SeedOffset is added to the run's seed (Config.Seed): ensemble members with different
	// offsets start from different weights and see the data in a different order (0 for the
	// original seven models).
	SeedOffset uint64
	// LRDecay overrides Config.LRDecay when > 0 (a slower decay for longer runs).
	LRDecay float64
	// Shift is Config.Shift for this model (random ±Shift-pixel translations of training images).
	Shift int
	// Bootstrap is Config.Bootstrap for this model (train on a bootstrap resample: bagging).
	Bootstrap bool
}

// pooled returns a branch that pools the image with p, then a ReLU MLP through hidden to 10.
func pooled(p PoolShape, hidden ...int) []Layer {
	oh, ow := p.out()
	br := []Layer{{Kind: AvgPool, Pool: p}}
	in := oh * ow
	for _, h := range hidden {
		br = append(br, Layer{Kind: Dense, In: in, Out: h}, Layer{Kind: ReLU})
		in = h
	}
	return append(br, Layer{Kind: Dense, In: in, Out: 10})
}

// Bundled lists the bundled classifiers, smallest first: clearly different sizes, latencies and
// accuracies in the style of Cocktail's Table 1, including one pooled front end and one
// two-branch (non-chain) DAG for INFless's operator profiling.
func Bundled() []Spec {
	return []Spec{
		{Arch: Arch{Name: "logreg", Description: "multinomial logistic regression 784→10", Branches: mlp()}, Epochs: 4},
		{Arch: Arch{Name: "pool-mlp64", Description: "2×2 average pool (784→196) then MLP 196→64→10", Branches: func() [][]Layer {
			return [][]Layer{{{Kind: AvgPool2}, {Kind: Dense, In: 196, Out: 64}, {Kind: ReLU}, {Kind: Dense, In: 64, Out: 10}}}
		}()}, Epochs: 5},
		{Arch: Arch{Name: "mlp32", Description: "MLP 784→32→10 (ReLU)", Branches: mlp(32)}, Epochs: 5, Role: "small"},
		{Arch: Arch{Name: "mlp128", Description: "MLP 784→128→10 (ReLU)", Branches: mlp(128)}, Epochs: 4},
		{Arch: Arch{Name: "mlp256", Description: "MLP 784→256→10 (ReLU)", Branches: mlp(256)}, Epochs: 6, Role: "medium"},
		{Arch: Arch{Name: "branch2", Description: "two parallel branches added before softmax: 784→256→10 and 784→64→64→10 (non-chain DAG)", Branches: func() [][]Layer {
			return append(mlp(256), mlp(64, 64)...)
		}()}, Epochs: 5},
		{Arch: Arch{Name: "mlp512x256", Description: "MLP 784→512→256→10 (ReLU)", Branches: mlp(512, 256)}, Epochs: 6, Role: "large"},
		// Ensemble members (Cocktail's model family, docs/cocktail.md "Model family"): models of
		// different kinds and input views, so that their errors decorrelate and a vote of the
		// fast ones can match a slower, more accurate one. A downsampled-view MLP, an MLP over
		// fixed oriented-gradient cells (a HOG-like view), a random-features kernel machine and
		// two convolutional nets.
		{Arch: Arch{Name: "pool2-mlp256", Description: "2×2 average pool (784→196) then MLP 196→256→10; seed +10", Branches: [][]Layer{
			pooled(PoolShape{KH: 2, KW: 2, SH: 2, SW: 2}, 256)}}, Epochs: 10, LRDecay: 0.8, SeedOffset: 10},
		{Arch: Arch{Name: "hog-mlp128", Description: "fixed oriented-gradient filters (8 directions, 3×3) → ReLU → 4×4 cell averages (8×7×7) then MLP 392→128→10; seed +20", Branches: [][]Layer{
			hogMLP(128)}}, Epochs: 8, LRDecay: 0.8, SeedOffset: 20},
		{Arch: Arch{Name: "rff1024", Description: "random Fourier features of a Gaussian kernel (width 4) on the 2×2-pooled image: 196→1024 fixed, cos, then a trained linear layer 1024→10; seed +21", Branches: [][]Layer{
			{{Kind: AvgPool2}, {Kind: Dense, In: 196, Out: 1024, Frozen: true, Init: InitFourier, Scale: 4}, {Kind: Cos}, {Kind: Dense, In: 1024, Out: 10}}}},
			Epochs: 8, LRDecay: 0.8, SeedOffset: 21},
		{Arch: Arch{Name: "cnn8x16", Description: "CNN: conv 5×5/2 ×8 → ReLU → conv 3×3/2 ×16 → ReLU → MLP 784→32→10; seed +22", Branches: [][]Layer{
			cnn(8, 16, 32)}}, Epochs: 4, LRDecay: 0.7, SeedOffset: 22},
		{Arch: Arch{Name: "cnn12x24-shift", Description: "CNN: conv 5×5/2 ×12 → ReLU → conv 3×3/2 ×24 → ReLU → MLP 1176→32→10, trained on ±1-pixel random shifts; seed +24", Branches: [][]Layer{
			cnn(12, 24, 32)}}, Epochs: 5, LRDecay: 0.7, SeedOffset: 24, Shift: 1},
		{Arch: Arch{Name: "hog-mlp256-shift", Description: "the hog-mlp128 view (fixed 8-direction gradients, 4×4 cells) then MLP 392→256→10, trained on ±1-pixel random shifts; seed +25", Branches: [][]Layer{
			hogMLP(256)}}, Epochs: 8, LRDecay: 0.8, SeedOffset: 25, Shift: 1},
		{Arch: Arch{Name: "cnn16x32", Description: "CNN: conv 5×5/2 ×16 → ReLU → conv 3×3/2 ×32 → ReLU → MLP 1568→64→10; seed +23", Branches: [][]Layer{
			cnn(16, 32, 64)}}, Epochs: 4, LRDecay: 0.7, SeedOffset: 23},
	}
}

// cnn returns a two-convolution branch: 5×5 stride 2 with c1 filters, 3×3 stride 2 with c2
// (28×28 → 14×14 → 7×7), then a hidden ReLU layer when hidden > 0, then 10 logits.
func cnn(c1, c2, hidden int) []Layer {
	br := []Layer{
		{Kind: Conv, Conv: ConvShape{Out: c1, K: 5, Stride: 2, Pad: 2}}, {Kind: ReLU},
		{Kind: Conv, Conv: ConvShape{Out: c2, K: 3, Stride: 2, Pad: 1}}, {Kind: ReLU},
	}
	in := c2 * 7 * 7
	if hidden > 0 {
		br = append(br, Layer{Kind: Dense, In: in, Out: hidden}, Layer{Kind: ReLU})
		in = hidden
	}
	return append(br, Layer{Kind: Dense, In: in, Out: 10})
}

// hogDirections is the number of gradient directions of hogMLP's fixed filters.
const hogDirections = 8

// hogMLP returns a branch over a HOG-like view: fixed 3×3 filters measuring the image gradient
// (Sobel) along 8 directions 45° apart, rectified so each keeps one signed direction, averaged
// over 4×4-pixel cells (7×7 cells × 8 directions = 392 features), then a trained MLP.
func hogMLP(hidden int) []Layer {
	sx := [9]float64{-1, 0, 1, -2, 0, 2, -1, 0, 1}
	sy := [9]float64{-1, -2, -1, 0, 0, 0, 1, 2, 1}
	grad := make([]float32, 9*hogDirections) // [1·3·3 × directions]
	for d := range hogDirections {
		th := 2 * math.Pi * float64(d) / hogDirections
		for i := range 9 {
			grad[i*hogDirections+d] = float32((math.Cos(th)*sx[i] + math.Sin(th)*sy[i]) / 4)
		}
	}
	cells := make([]float32, hogDirections*16*hogDirections) // [directions·4·4 × directions]
	for d := range hogDirections {
		for i := range 16 {
			cells[(d*16+i)*hogDirections+d] = 1.0 / 16
		}
	}
	in := hogDirections * 7 * 7
	return []Layer{
		{Kind: Conv, Conv: ConvShape{Out: hogDirections, K: 3, Stride: 1, Pad: 1}, Frozen: true, Init: InitGiven, Weights: grad}, {Kind: ReLU},
		{Kind: Conv, Conv: ConvShape{Out: hogDirections, K: 4, Stride: 4}, Frozen: true, Init: InitGiven, Weights: cells},
		{Kind: Dense, In: in, Out: hidden}, {Kind: ReLU}, {Kind: Dense, In: hidden, Out: 10},
	}
}
