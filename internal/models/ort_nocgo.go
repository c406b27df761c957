//go:build !cgo

package models

import "fmt"

func openORT(model []byte, meta Metadata, opts Options) (Runner, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo", ErrRuntimeUnavailable)
}
