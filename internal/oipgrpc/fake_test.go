package oipgrpc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// fakeCore is a hand-written oip.Core: model "sum" (FP32 x[-1,3] → FP32 sum[-1,1], INT64
// argmax[-1]), model "echo" (BYTES text[-1] → BYTES text[-1]), and models whose inference fails
// with a given error. It records the last Call.
type fakeCore struct {
	mu       sync.Mutex
	notReady bool
	last     *oip.Call
	failures map[string]error
}

var _ oip.Core = (*fakeCore)(nil)

func newFakeCore() *fakeCore {
	return &fakeCore{failures: map[string]error{
		"overloaded": oip.WithRetryAfter(fmt.Errorf("%w: queue full", oip.ErrOverloaded), 3*time.Second),
		"down":       fmt.Errorf("%w: draining", oip.ErrUnavailable),
		"late":       fmt.Errorf("%w: deadline passed in queue", oip.ErrDeadline),
		"broken":     fmt.Errorf("%w: worker crashed", oip.ErrInternal),
		"canceled":   context.Canceled,
	}}
}

var sumMetadata = &oip.ModelMetadata{
	Name: "sum", Versions: []string{"1"}, Platform: "fake",
	Inputs:  []oip.TensorMetadata{{Name: "x", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 3}}},
	Outputs: []oip.TensorMetadata{{Name: "sum", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 1}}, {Name: "argmax", Datatype: oip.DatatypeINT64, Shape: []int64{-1}}},
}

var echoMetadata = &oip.ModelMetadata{
	Name: "echo", Platform: "fake",
	Inputs:  []oip.TensorMetadata{{Name: "text", Datatype: oip.DatatypeBYTES, Shape: []int64{-1}}},
	Outputs: []oip.TensorMetadata{{Name: "text", Datatype: oip.DatatypeBYTES, Shape: []int64{-1}}},
}

func (f *fakeCore) ServerMetadata(context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: "fake", Version: "0.1", Extensions: []string{"sloserve"}}, nil
}

func (f *fakeCore) Ready(context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.notReady
}

func (f *fakeCore) Models(context.Context) ([]oip.RepositoryIndexEntry, error) {
	return []oip.RepositoryIndexEntry{{Name: "sum", State: oip.StateReady}, {Name: "echo", State: oip.StateReady}}, nil
}

func (f *fakeCore) ModelMetadata(_ context.Context, model, version string) (*oip.ModelMetadata, error) {
	switch {
	case model == "sum" && (version == "" || version == "1"):
		return sumMetadata, nil
	case model == "echo" && version == "":
		return echoMetadata, nil
	case f.failures[model] != nil:
		md := *sumMetadata
		md.Name = model
		return &md, nil
	}
	return nil, fmt.Errorf("%w: %q version %q", oip.ErrModelNotFound, model, version)
}

func (f *fakeCore) ModelReady(ctx context.Context, model, version string) (bool, error) {
	if _, err := f.ModelMetadata(ctx, model, version); err != nil {
		return false, err
	}
	return model != "down", nil
}

func (f *fakeCore) Infer(_ context.Context, call *oip.Call) (*oip.InferenceResponse, error) {
	f.mu.Lock()
	f.last = call
	f.mu.Unlock()
	if err := f.failures[call.Model]; err != nil {
		return nil, err
	}
	if call.Model == "echo" {
		in := call.Request.Inputs[0]
		return &oip.InferenceResponse{Outputs: []oip.Tensor{{Name: "text", Datatype: oip.DatatypeBYTES, Shape: in.Shape, BYTES: in.BYTES}},
			ServiceTime: 250 * time.Microsecond}, nil
	}
	x := call.Request.Input("x")
	rows := x.Rows()
	sum := make([]float32, rows)
	arg := make([]int64, rows)
	for r := range rows {
		row := x.FP32[3*r : 3*r+3]
		for j, v := range row {
			sum[r] += v
			if v > row[arg[r]] {
				arg[r] = int64(j)
			}
		}
	}
	return &oip.InferenceResponse{
		ModelVersion: "1",
		Parameters:   oip.Parameters{"batch": int64(rows)},
		Outputs: []oip.Tensor{
			oip.NewFP32("sum", []int64{rows, 1}, sum),
			{Name: "argmax", Datatype: oip.DatatypeINT64, Shape: []int64{rows}, INT64: arg},
		},
		ServiceTime: 1500 * time.Microsecond,
	}, nil
}

func (f *fakeCore) lastCall() *oip.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}
