// Package bundled embeds the bundled Fashion-MNIST classifiers (ONNX), their manifest and the
// labelled 1,000-image test sample, so the sloserve binary runs from anywhere. Regenerate the
// files with `make models` (sloserve train --out models).
package bundled

import (
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/models/fashion"
)

//go:embed manifest.json *.onnx sample-1000.idx.gz validation-2000.idx.gz
var files embed.FS

// manifestFile is the manifest's file name inside the bundle.
const manifestFile = "manifest.json"

var parsed = sync.OnceValues(func() (*models.Manifest, error) {
	b, err := files.ReadFile(manifestFile)
	if err != nil {
		return nil, fmt.Errorf("bundled manifest: %w", err)
	}
	return models.ParseManifest(b)
})

var sample = sync.OnceValues(func() (*fashion.Set, error) {
	m, err := parsed()
	if err != nil {
		return nil, err
	}
	b, err := files.ReadFile(m.Sample.File)
	if err != nil {
		return nil, fmt.Errorf("bundled sample: %w", err)
	}
	return fashion.ReadSample(b)
})

var validation = sync.OnceValues(func() (*fashion.Set, error) {
	m, err := parsed()
	if err != nil {
		return nil, err
	}
	if m.Validation.File == "" {
		return nil, fmt.Errorf("bundled validation sample: the manifest names none (re-run `make models`)")
	}
	b, err := files.ReadFile(m.Validation.File)
	if err != nil {
		return nil, fmt.Errorf("bundled validation sample: %w", err)
	}
	return fashion.ReadSample(b)
})

// Manifest returns the bundled models' manifest (shared; callers must not modify it).
func Manifest() (*models.Manifest, error) { return parsed() }

// Names returns the bundled model names, smallest first.
func Names() []string {
	m, err := parsed()
	if err != nil {
		return nil
	}
	return m.Names()
}

// Model returns the ONNX bytes of the named bundled model.
func Model(name string) ([]byte, error) {
	m, err := parsed()
	if err != nil {
		return nil, err
	}
	mi, ok := m.Model(name)
	if !ok {
		return nil, fmt.Errorf("bundled model %q: not found (have %v)", name, m.Names())
	}
	return files.ReadFile(mi.File)
}

// Open opens the named bundled model with the runtime chosen in opts (opts.Name defaults to name).
func Open(name string, opts models.Options) (models.Runner, models.Metadata, error) {
	b, err := Model(name)
	if err != nil {
		return nil, models.Metadata{}, err
	}
	if opts.Name == "" {
		opts.Name = name
	}
	return models.Open(b, opts)
}

// Sample returns the labelled sample of 1,000 test images (100 per class; shared, read-only).
func Sample() (*fashion.Set, error) { return sample() }

// Validation returns the labelled validation sample: 2,000 held-out training images (200 per
// class) that no bundled model was trained on (shared, read-only).
func Validation() (*fashion.Set, error) { return validation() }

// FS returns the embedded files (manifest.json, <name>.onnx, the sample).
func FS() fs.FS { return files }
