package train

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/models/onnx"
)

// SampleFile is the file name of the committed labelled sample inside the bundle directory.
const SampleFile = "sample-1000.idx.gz"

// ValidationFile is the file name of the committed labelled validation sample: images of the
// training file's held-out split, which no bundled model was trained on.
const ValidationFile = "validation-2000.idx.gz"

// ValidationSplit is the number of images at the end of the 60,000-image training file held out
// from training: model accuracies, voting priors and rankings are measured on them (never on
// the test set, EVALUATION.md rule 5).
const ValidationSplit = 10000

// ManifestFile is the file name of the manifest inside the bundle directory.
const ManifestFile = "manifest.json"

// BundleConfig configures Bundle.
type BundleConfig struct {
	// Out is the directory the .onnx files, the manifest and the sample are written to.
	Out string
	// DataDir holds the Fashion-MNIST idx files (default fashion.DefaultDir).
	DataDir string
	// Train is the training configuration; Train.Epochs = 0 means each Spec's own epoch count.
	Train Config
	// Models restricts the run to these model names; empty means all of Bundled().
	Models []string
	// TrainLimit uses only the first TrainLimit training images (0 = all 50,000 before the
	// validation split); for quick runs.
	TrainLimit int
	// SamplePerClass is the number of test images per class in the sample (default 100 → 1,000).
	SamplePerClass int
	// ValidationPerClass is the number of validation images per class in the committed
	// validation sample (default 200 → 2,000).
	ValidationPerClass int
}

// DefaultBundleConfig returns the configuration `make models` uses.
func DefaultBundleConfig() BundleConfig {
	c := DefaultConfig()
	c.Epochs = 0
	return BundleConfig{Out: "models", DataDir: fashion.DefaultDir, Train: c, SamplePerClass: 100, ValidationPerClass: 200}
}

// Bundle trains the bundled models on the first 50,000 training images, exports them to ONNX,
// evaluates each with the native runtime on the held-out last ValidationSplit training images,
// the full test set and the sample, and writes <Out>/<name>.onnx, the sample, the validation
// sample and the manifest.
func Bundle(ctx context.Context, cfg BundleConfig) (*models.Manifest, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = fashion.DefaultDir
	}
	if cfg.SamplePerClass <= 0 {
		cfg.SamplePerClass = 100
	}
	if cfg.ValidationPerClass <= 0 {
		cfg.ValidationPerClass = 200
	}
	log := cfg.Train.Log
	if log == nil {
		log = io.Discard
	}
	specs := Bundled()
	if len(cfg.Models) > 0 {
		var sel []Spec
		for _, name := range cfg.Models {
			i := slices.IndexFunc(specs, func(s Spec) bool { return s.Arch.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("bundle: unknown model %q", name)
			}
			sel = append(sel, specs[i])
		}
		specs = sel
	}
	trainFile, err := fashion.Load(cfg.DataDir, "train")
	if err != nil {
		return nil, err
	}
	if trainFile.Len() <= ValidationSplit {
		return nil, fmt.Errorf("bundle: %d training images, need more than the %d held out", trainFile.Len(), ValidationSplit)
	}
	valSet := trainFile.Slice(trainFile.Len()-ValidationSplit, trainFile.Len())
	trainSet := trainFile.Slice(0, trainFile.Len()-ValidationSplit)
	if cfg.TrainLimit > 0 && cfg.TrainLimit < trainSet.Len() {
		trainSet = trainSet.Slice(0, cfg.TrainLimit)
	}
	testSet, err := fashion.Load(cfg.DataDir, "t10k")
	if err != nil {
		return nil, err
	}
	sample := stratifiedSample(testSet, cfg.SamplePerClass)
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	var sb bytes.Buffer
	if err := fashion.WriteSample(&sb, sample); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, SampleFile), sb.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	valSample := stratifiedSample(valSet, cfg.ValidationPerClass)
	sb.Reset()
	if err := fashion.WriteSample(&sb, valSample); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, ValidationFile), sb.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	man := &models.Manifest{
		Dataset:    "Fashion-MNIST (Debian dataset-fashion-mnist): 60,000 training and 10,000 test images",
		InputScale: "pixel/255, row-major 28x28 (784 float32 per image)",
		Classes:    fashion.ClassNames[:],
		Sample: models.SampleInfo{File: SampleFile, Format: "gzip of an idx3 images stream followed by an idx1 labels stream",
			Images: sample.Len(), Selection: fmt.Sprintf("the first %d test images of each class, in test-set order", cfg.SamplePerClass)},
		Validation: models.SampleInfo{File: ValidationFile, Format: "gzip of an idx3 images stream followed by an idx1 labels stream",
			Images: valSample.Len(), Selection: fmt.Sprintf("the first %d images of each class among the last %d of the training file, which no model was trained on", cfg.ValidationPerClass, ValidationSplit)},
		Serving: map[string]string{},
	}
	for _, spec := range specs {
		tc := cfg.Train
		if tc.Epochs == 0 {
			tc.Epochs = spec.Epochs
		}
		tc.Seed += spec.SeedOffset
		if spec.LRDecay > 0 {
			tc.LRDecay = spec.LRDecay
		}
		tc.Shift, tc.Bootstrap = spec.Shift, spec.Bootstrap
		res, err := Train(ctx, spec.Arch, trainSet, tc)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", spec.Arch.Name, err)
		}
		b := onnx.Marshal(res.Model)
		file := spec.Arch.Name + ".onnx"
		if err := os.WriteFile(filepath.Join(cfg.Out, file), b, 0o644); err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		r, meta, err := models.Open(b, models.Options{Name: spec.Arch.Name})
		if err != nil {
			return nil, fmt.Errorf("bundle %s: reopen: %w", spec.Arch.Name, err)
		}
		acc, perClass, err := Evaluate(ctx, r, testSet)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", spec.Arch.Name, err)
		}
		sacc, _, err := Evaluate(ctx, r, sample)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", spec.Arch.Name, err)
		}
		vacc, _, err := Evaluate(ctx, r, valSet)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: %w", spec.Arch.Name, err)
		}
		sum := sha256.Sum256(b)
		var ops []string
		for _, n := range res.Model.Graph.Nodes {
			if !slices.Contains(ops, n.OpType) {
				ops = append(ops, n.OpType)
			}
		}
		man.Models = append(man.Models, models.ModelInfo{
			Name: spec.Arch.Name, File: file, Architecture: spec.Arch.Description,
			Params: meta.Params, Nodes: meta.Nodes, Operators: ops, Inputs: meta.Inputs, Outputs: meta.Outputs,
			Accuracy: round4(acc), ClassAccuracy: roundAll(perClass), SampleAccuracy: round4(sacc), ValidationAccuracy: round4(vacc),
			Training: models.TrainingInfo{Seed: tc.Seed, Epochs: tc.Epochs, BatchSize: tc.BatchSize, Optimizer: "adam(0.9,0.999,1e-8)",
				LearningRate: tc.LearningRate, LRDecay: tc.LRDecay, TrainImages: trainSet.Len(), FinalLoss: round4(res.FinalLoss)},
			SHA256: hex.EncodeToString(sum[:]),
		})
		if spec.Role != "" {
			man.Serving[spec.Role] = spec.Arch.Name
		}
		fmt.Fprintf(log, "bundle %s: %d params, validation accuracy %.4f, test accuracy %.4f, sample accuracy %.4f, trained in %s\n",
			spec.Arch.Name, meta.Params, vacc, acc, sacc, res.Elapsed.Round(1e9))
	}
	if len(cfg.Models) > 0 {
		mergeExisting(man, filepath.Join(cfg.Out, ManifestFile))
	}
	js, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, ManifestFile), append(js, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	return man, nil
}

// Evaluate runs r over set in batches of 256 and returns the top-1 accuracy and per-class recall.
func Evaluate(ctx context.Context, r models.Runner, set *fashion.Set) (float64, []float64, error) {
	const batch = 256
	correct, total := make([]int, fashion.NumClasses), make([]int, fashion.NumClasses)
	var x []float32
	for b0 := 0; b0 < set.Len(); b0 += batch {
		b1 := min(b0+batch, set.Len())
		x = set.Floats(x, b0, b1)
		out, err := r.Run(ctx, []models.Tensor{{Name: InputName, Shape: []int64{int64(b1 - b0), fashion.Pixels}, Data: x}})
		if err != nil {
			return 0, nil, fmt.Errorf("evaluate: %w", err)
		}
		for i := 0; i < b1-b0; i++ {
			row := out[0].Data[i*fashion.NumClasses : (i+1)*fashion.NumClasses]
			label := set.Labels[b0+i]
			total[label]++
			if Argmax(row) == int(label) {
				correct[label]++
			}
		}
	}
	var c, t int
	per := make([]float64, fashion.NumClasses)
	for k := range per {
		c += correct[k]
		t += total[k]
		if total[k] > 0 {
			per[k] = float64(correct[k]) / float64(total[k])
		}
	}
	if t == 0 {
		return 0, per, nil
	}
	return float64(c) / float64(t), per, nil
}

// Argmax returns the index of the largest value (the first on ties).
func Argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// stratifiedSample returns the first perClass images of each class, in set order.
func stratifiedSample(set *fashion.Set, perClass int) *fashion.Set {
	count := make([]int, fashion.NumClasses)
	out := &fashion.Set{}
	for i := 0; i < set.Len(); i++ {
		l := set.Labels[i]
		if count[l] >= perClass {
			continue
		}
		count[l]++
		out.Images = append(out.Images, set.Image(i)...)
		out.Labels = append(out.Labels, l)
	}
	return out
}

func round4(x float64) float64 { return float64(int64(x*1e4+0.5)) / 1e4 }

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = round4(x)
	}
	return out
}

// mergeExisting keeps the entries (and serving roles) of models that this run did not train from
// the manifest already at path, so `train --models a,b` refreshes a and b only. Entries are kept
// in Bundled() order.
func mergeExisting(man *models.Manifest, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	old, err := models.ParseManifest(b)
	if err != nil {
		return
	}
	for _, mi := range old.Models {
		if _, ok := man.Model(mi.Name); !ok {
			man.Models = append(man.Models, mi)
		}
	}
	for role, name := range old.Serving {
		if _, ok := man.Serving[role]; !ok {
			man.Serving[role] = name
		}
	}
	rank := map[string]int{}
	for i, s := range Bundled() {
		rank[s.Arch.Name] = i
	}
	slices.SortStableFunc(man.Models, func(a, b models.ModelInfo) int { return rank[a.Name] - rank[b.Name] })
}
