package models

import (
	"encoding/json"
	"fmt"
)

// Manifest describes the bundled models (models/manifest.json): what each is, how it was trained,
// and its accuracy on the full Fashion-MNIST test set.
type Manifest struct {
	// Dataset names the data set the models were trained and tested on.
	Dataset string `json:"dataset"`
	// InputScale says how an image becomes the model input: "pixel/255", row-major 28×28.
	InputScale string `json:"input_scale"`
	// Classes are the class names, indexed by class id (the output position).
	Classes []string `json:"classes"`
	// Sample describes the committed labelled sample of test images.
	Sample SampleInfo `json:"sample"`
	// Validation describes the committed labelled sample of held-out training images, on which
	// ensembles measure accuracies, priors and rankings (empty in manifests from before the split).
	Validation SampleInfo `json:"validation"`
	// Serving maps the roles "small", "medium", "large" to model names.
	Serving map[string]string `json:"serving"`
	// Models lists every bundled model.
	Models []ModelInfo `json:"models"`
}

// SampleInfo describes a committed sample of labelled images.
type SampleInfo struct {
	File   string `json:"file"`
	Format string `json:"format"`
	Images int    `json:"images"`
	// Selection says how the images were picked from the test set.
	Selection string `json:"selection"`
}

// ModelInfo is one bundled model's manifest entry.
type ModelInfo struct {
	Name         string       `json:"name"`
	File         string       `json:"file"`
	Architecture string       `json:"architecture"`
	Params       int64        `json:"params"`
	Nodes        int          `json:"nodes"`
	Operators    []string     `json:"operators"`
	Inputs       []TensorInfo `json:"inputs"`
	Outputs      []TensorInfo `json:"outputs"`
	// Accuracy is the top-1 accuracy on the full 10,000-image test set (fraction).
	Accuracy float64 `json:"accuracy"`
	// ClassAccuracy is the per-class recall on the test set, indexed by class id (fractions).
	ClassAccuracy []float64 `json:"class_accuracy"`
	// SampleAccuracy is the top-1 accuracy on the committed sample (fraction).
	SampleAccuracy float64 `json:"sample_accuracy"`
	// ValidationAccuracy is the top-1 accuracy on the held-out validation split of the training
	// file (fraction): what choices are made on.
	ValidationAccuracy float64 `json:"validation_accuracy"`
	// Training records how the model was trained.
	Training TrainingInfo `json:"training"`
	// SHA256 is the hex digest of the .onnx file.
	SHA256 string `json:"sha256"`
}

// TrainingInfo records a model's training run; re-running with it reproduces the model bit for bit.
type TrainingInfo struct {
	Seed         uint64  `json:"seed"`
	Epochs       int     `json:"epochs"`
	BatchSize    int     `json:"batch_size"`
	Optimizer    string  `json:"optimizer"`
	LearningRate float64 `json:"learning_rate"`
	LRDecay      float64 `json:"lr_decay_per_epoch"`
	TrainImages  int     `json:"train_images"`
	FinalLoss    float64 `json:"final_epoch_loss"`
}

// ParseManifest decodes and checks a manifest.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	seen := map[string]bool{}
	for i, mi := range m.Models {
		if mi.Name == "" || mi.File == "" {
			return nil, fmt.Errorf("parse manifest: model %d has no name or file", i)
		}
		if seen[mi.Name] {
			return nil, fmt.Errorf("parse manifest: model %q listed twice", mi.Name)
		}
		seen[mi.Name] = true
	}
	for role, name := range m.Serving {
		if !seen[name] {
			return nil, fmt.Errorf("parse manifest: serving role %q names unknown model %q", role, name)
		}
	}
	return &m, nil
}

// Model returns the manifest entry of the named model.
func (m *Manifest) Model(name string) (ModelInfo, bool) {
	for _, mi := range m.Models {
		if mi.Name == name {
			return mi, true
		}
	}
	return ModelInfo{}, false
}

// Names returns the model names in manifest order.
func (m *Manifest) Names() []string {
	out := make([]string, len(m.Models))
	for i, mi := range m.Models {
		out[i] = mi.Name
	}
	return out
}
