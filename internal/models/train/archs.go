package train

import "fmt"

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
	// offsets start from different weights and see the data in a different order. 0 for the
	// original seven models, so their bytes do not change.
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
		// Ensemble members (Cocktail's model family): faster than mlp256, each seeing the image
		// through a different input view, from a different seed (initial weights and data order),
		// some on randomly shifted images, so their errors decorrelate and a vote of them can beat
		// the best single model. Longer, slower-decaying schedules than the seven above.
		{Arch: Arch{Name: "pool2-mlp256", Description: "2×2 average pool (784→196) then MLP 196→256→10; seed +10", Branches: [][]Layer{
			pooled(PoolShape{KH: 2, KW: 2, SH: 2, SW: 2}, 256)}}, Epochs: 10, LRDecay: 0.8, SeedOffset: 10},
		{Arch: Arch{Name: "pool3s2-mlp256", Description: "overlapping 3×3 stride-2 average pool (784→169) then MLP 169→256→10; seed +11, ±1-pixel random shifts", Branches: [][]Layer{
			pooled(PoolShape{KH: 3, KW: 3, SH: 2, SW: 2}, 256)}}, Epochs: 10, LRDecay: 0.8, SeedOffset: 11, Shift: 1},
		{Arch: Arch{Name: "mlp128-shift", Description: "MLP 784→128→10 (ReLU); seed +13, ±1-pixel random shifts", Branches: mlp(128)}, Epochs: 10, LRDecay: 0.8, SeedOffset: 13, Shift: 1},
		// A second round of members (docs/cocktail.md, "Model family"): 15 epochs with lr ×0.85
		// per epoch and no shifts, which cost accuracy here. Three MLP 784→128 on different
		// bootstrap resamples (bagging) and three 2×2-pooled MLPs 196→256, two on the full set
		// from different seeds and one bagged. The seed in the name is the run's (1 + SeedOffset).
		bag128(31), bag128(32), bag128(35),
		pool2Member(36, false), pool2Member(37, false), pool2Member(38, true),
	}
}

// bag128 is a bagged ensemble member: MLP 784→128→10 trained on the bootstrap resample drawn
// from seed (Config.Seed + SeedOffset = seed with the default seed 1).
func bag128(seed uint64) Spec {
	return Spec{Arch: Arch{Name: fmt.Sprintf("mlp128-bag%d", seed),
		Description: fmt.Sprintf("MLP 784→128→10 (ReLU) on a bootstrap resample of the training set (bagging); seed %d, 15 epochs", seed),
		Branches:    mlp(128)}, Epochs: 15, LRDecay: 0.85, SeedOffset: seed - 1, Bootstrap: true}
}

// pool2Member is a 2×2-pooled ensemble member, 196→256→10, from seed (as bag128), bagged or not.
func pool2Member(seed uint64, bagged bool) Spec {
	name, how := fmt.Sprintf("pool2-mlp256-s%d", seed), "the full training set"
	if bagged {
		name, how = fmt.Sprintf("pool2-mlp256-bag%d", seed), "a bootstrap resample of the training set (bagging)"
	}
	return Spec{Arch: Arch{Name: name,
		Description: fmt.Sprintf("2×2 average pool (784→196) then MLP 196→256→10 on %s; seed %d, 15 epochs", how, seed),
		Branches:    [][]Layer{pooled(PoolShape{KH: 2, KW: 2, SH: 2, SW: 2}, 256)}}, Epochs: 15, LRDecay: 0.85, SeedOffset: seed - 1, Bootstrap: bagged}
}
