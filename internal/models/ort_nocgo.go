//go:build !cgo

package models

import "fmt"

// DefaultORTLibrary is the path, relative to the repository root, where scripts/setup.sh ort
// puts the ONNX Runtime shared library.
const DefaultORTLibrary = ".cache/onnxruntime/libonnxruntime.so"

func openORT(model []byte, meta Metadata, opts Options) (Runner, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo", ErrRuntimeUnavailable)
}
