package models

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultORTLibrary is the path, relative to the repository root, where scripts/setup.sh ort
// puts the ONNX Runtime shared library.
const DefaultORTLibrary = ".cache/onnxruntime/libonnxruntime.so"

// FindORTLibrary resolves the ONNX Runtime library path: explicit if set, else $ONNXRUNTIME_LIB,
// else DefaultORTLibrary in the working directory or its nearest parent that has it.
func FindORTLibrary(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p := os.Getenv("ONNXRUNTIME_LIB"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%w: onnxruntime library: %v", ErrRuntimeUnavailable, err)
	}
	for {
		p := filepath.Join(dir, DefaultORTLibrary)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: onnxruntime library not found (set --onnxruntime-lib or ONNXRUNTIME_LIB, or run scripts/setup.sh ort)", ErrRuntimeUnavailable)
		}
		dir = parent
	}
}
