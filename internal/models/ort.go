//go:build cgo

package models

import (
	"context"
	"fmt"
	"os"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// ortEnv is the process-wide ONNX Runtime environment: the library can be loaded and
// initialised only once per process (onnxruntime_go keeps it in package state).
var ortEnv struct {
	mu   sync.Mutex
	lib  string // library path of the initialised environment
	err  error  // first initialisation failure, returned to every later caller
	done bool
}

// initORT loads the library and creates the environment once per process.
func initORT(explicit string) error {
	ortEnv.mu.Lock()
	defer ortEnv.mu.Unlock()
	if ortEnv.done {
		return ortEnv.err
	}
	lib, err := FindORTLibrary(explicit)
	if err != nil {
		return err // not sticky: a later call may name a library
	}
	if _, err := os.Stat(lib); err != nil {
		return fmt.Errorf("%w: onnxruntime library: %v", ErrRuntimeUnavailable, err)
	}
	ortEnv.done, ortEnv.lib = true, lib
	ort.SetSharedLibraryPath(lib)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		ortEnv.err = fmt.Errorf("%w: load %s: %v", ErrRuntimeUnavailable, lib, err)
	}
	return ortEnv.err
}

// ortRunner runs a model with an ONNX Runtime DynamicAdvancedSession (safe for concurrent Run).
type ortRunner struct {
	meta Metadata
	sess *ort.DynamicAdvancedSession
}

var _ Runner = (*ortRunner)(nil)

func openORT(model []byte, meta Metadata, opts Options) (Runner, error) {
	if err := initORT(opts.ORTLibrary); err != nil {
		return nil, err
	}
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("onnxruntime session options: %w", err)
	}
	defer so.Destroy()
	threads := opts.IntraOpThreads
	if threads == 0 {
		threads = 1
	}
	if err := so.SetIntraOpNumThreads(threads); err != nil {
		return nil, fmt.Errorf("onnxruntime intra-op threads: %w", err)
	}
	if err := so.SetInterOpNumThreads(1); err != nil {
		return nil, fmt.Errorf("onnxruntime inter-op threads: %w", err)
	}
	names := func(ts []TensorInfo) []string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.Name
		}
		return out
	}
	sess, err := ort.NewDynamicAdvancedSessionWithONNXData(model, names(meta.Inputs), names(meta.Outputs), so)
	if err != nil {
		return nil, fmt.Errorf("onnxruntime session for %s: %w", meta.Name, err)
	}
	return &ortRunner{meta: meta, sess: sess}, nil
}

// Run implements Runner.
func (r *ortRunner) Run(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	if _, err := r.meta.CheckInputs(inputs); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ins := make([]ort.Value, len(inputs))
	defer func() {
		for _, v := range ins {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for i, in := range inputs {
		t, err := ort.NewTensor(ort.NewShape(in.Shape...), in.Data)
		if err != nil {
			return nil, fmt.Errorf("run %s: input %q: %w", r.meta.Name, r.meta.Inputs[i].Name, err)
		}
		ins[i] = t
	}
	outs := make([]ort.Value, len(r.meta.Outputs))
	defer func() {
		for _, v := range outs {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	if err := r.sess.Run(ins, outs); err != nil {
		return nil, fmt.Errorf("run %s: %w", r.meta.Name, err)
	}
	res := make([]Tensor, len(outs))
	for i, v := range outs {
		t, ok := v.(*ort.Tensor[float32])
		if !ok {
			return nil, fmt.Errorf("run %s: output %q is not a float32 tensor", r.meta.Name, r.meta.Outputs[i].Name)
		}
		res[i] = Tensor{
			Name:  r.meta.Outputs[i].Name,
			Shape: append([]int64(nil), t.GetShape()...),
			Data:  append([]float32(nil), t.GetData()...),
		}
	}
	return res, nil
}

// Close implements Runner.
func (r *ortRunner) Close() error { return r.sess.Destroy() }
