package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/oip"
)

// DefaultVersion is the version every model is served under.
const DefaultVersion = "1"

// Model is one servable model: its OIP metadata and the runner that computes it. The Worker owns
// the Runner and closes it.
type Model struct {
	// Name is the model name in URLs; Version its only version (DefaultVersion when empty).
	Name, Version string
	// Platform is reported in the metadata ("onnx" for ONNX models).
	Platform string
	// Inputs and Outputs describe the tensors, with -1 for the batch dimension; the Runner takes
	// inputs in this order.
	Inputs, Outputs []oip.TensorMetadata
	// Runner computes a batch.
	Runner models.Runner
}

// FromRunner builds a Model from an opened runner and the metadata models.Open returned.
func FromRunner(name string, r models.Runner, md models.Metadata) Model {
	if name == "" {
		name = md.Name
	}
	conv := func(ts []models.TensorInfo) []oip.TensorMetadata {
		out := make([]oip.TensorMetadata, len(ts))
		for i, t := range ts {
			out[i] = oip.TensorMetadata{Name: t.Name, Datatype: oip.Datatype(t.Datatype), Shape: slices.Clone(t.Shape)}
		}
		return out
	}
	return Model{Name: name, Version: DefaultVersion, Platform: "onnx", Inputs: conv(md.Inputs), Outputs: conv(md.Outputs), Runner: r}
}

// ErrUnknownModel is wrapped by Load errors for a model name found neither in the directory nor
// in the catalog, or named twice; the CLI reports it as a usage error.
var ErrUnknownModel = errors.New("unknown model")

// Catalog opens models by name; the embedded bundle (package models/bundled) is one.
type Catalog interface {
	// Names lists the models the catalog can open.
	Names() []string
	// Open opens one of them with the runtime chosen in opts.
	Open(name string, opts models.Options) (models.Runner, models.Metadata, error)
}

// LoadConfig says which models Load opens.
type LoadConfig struct {
	// Names are the models to serve. Each is looked up as Dir/<name>.onnx first (when Dir is
	// set), then in the catalog. Empty means every *.onnx file in Dir when Dir is set, else every
	// catalog model.
	Names []string
	// Dir is a directory of user ONNX files, each served under its base name without ".onnx".
	Dir string
	// Options choose the runtime (native or onnxruntime) and its library.
	Options models.Options
}

// Load opens the models cfg names. On error it closes what it opened.
func Load(cat Catalog, cfg LoadConfig) (ms []Model, err error) {
	defer func() {
		if err != nil {
			for _, m := range ms {
				m.Runner.Close()
			}
			ms = nil
		}
	}()
	names := cfg.Names
	if len(names) == 0 {
		if cfg.Dir != "" {
			files, err := filepath.Glob(filepath.Join(cfg.Dir, "*.onnx"))
			if err != nil {
				return nil, fmt.Errorf("load models: %w", err)
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("load models: no *.onnx files in %s", cfg.Dir)
			}
			for _, f := range files {
				names = append(names, strings.TrimSuffix(filepath.Base(f), ".onnx"))
			}
		} else if cat != nil {
			names = cat.Names()
		}
	}
	if len(names) == 0 {
		return nil, errors.New("load models: no models to serve")
	}
	seen := map[string]bool{}
	for _, name := range names {
		if name == "" || seen[name] {
			return ms, fmt.Errorf("load models: %w: name %q is empty or repeated", ErrUnknownModel, name)
		}
		seen[name] = true
		opts := cfg.Options
		opts.Name = name
		var r models.Runner
		var md models.Metadata
		path := ""
		if cfg.Dir != "" {
			path = filepath.Join(cfg.Dir, name+".onnx")
			if _, statErr := os.Stat(path); statErr != nil {
				path = ""
			}
		}
		switch {
		case path != "":
			r, md, err = models.OpenFile(path, opts)
		case cat != nil && slices.Contains(cat.Names(), name):
			r, md, err = cat.Open(name, opts)
		default:
			where := "the bundled models"
			if cfg.Dir != "" {
				where = cfg.Dir + " or the bundled models"
			}
			var have []string
			if cat != nil {
				have = cat.Names()
			}
			return ms, fmt.Errorf("load models: %w: no model %q in %s (bundled: %v)", ErrUnknownModel, name, where, have)
		}
		if err != nil {
			return ms, fmt.Errorf("load model %q: %w", name, err)
		}
		ms = append(ms, FromRunner(name, r, md))
	}
	return ms, nil
}
