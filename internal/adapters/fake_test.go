package adapters

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// fakeCore is a hand-written oip.Core with a few small models:
//
//	double  FP32 x[-1,2]            → FP32 y[-1,2] (2x)
//	sum     FP32 x[-1,3]            → FP32 sum[-1], INT64 argmax[-1]
//	pair    INT64 a[-1], INT64 b[-1] → INT64 s[-1] (a+b)
//	text    BYTES t[-1]             → INT64 len[-1]
//	busy    like double, Infer fails with ErrOverloaded (retry after 2 s)
//	down    like double, not ready
type fakeCore struct {
	mu       sync.Mutex
	notReady bool
	calls    int
}

var _ oip.Core = (*fakeCore)(nil)

func meta(name string, ins, outs []oip.TensorMetadata) *oip.ModelMetadata {
	return &oip.ModelMetadata{Name: name, Platform: "fake", Inputs: ins, Outputs: outs}
}

var fakeModels = map[string]*oip.ModelMetadata{
	"double": meta("double", []oip.TensorMetadata{{Name: "x", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 2}}},
		[]oip.TensorMetadata{{Name: "y", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 2}}}),
	"sum": meta("sum", []oip.TensorMetadata{{Name: "x", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 3}}},
		[]oip.TensorMetadata{{Name: "sum", Datatype: oip.DatatypeFP32, Shape: []int64{-1}}, {Name: "argmax", Datatype: oip.DatatypeINT64, Shape: []int64{-1}}}),
	"pair": meta("pair", []oip.TensorMetadata{{Name: "a", Datatype: oip.DatatypeINT64, Shape: []int64{-1}}, {Name: "b", Datatype: oip.DatatypeINT64, Shape: []int64{-1}}},
		[]oip.TensorMetadata{{Name: "s", Datatype: oip.DatatypeINT64, Shape: []int64{-1}}}),
	"text": meta("text", []oip.TensorMetadata{{Name: "t", Datatype: oip.DatatypeBYTES, Shape: []int64{-1}}},
		[]oip.TensorMetadata{{Name: "len", Datatype: oip.DatatypeINT64, Shape: []int64{-1}}}),
	"busy": meta("busy", []oip.TensorMetadata{{Name: "x", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 2}}},
		[]oip.TensorMetadata{{Name: "y", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 2}}}),
	"down": meta("down", []oip.TensorMetadata{{Name: "x", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 2}}},
		[]oip.TensorMetadata{{Name: "y", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 2}}}),
}

func (f *fakeCore) ServerMetadata(context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: "fake"}, nil
}

func (f *fakeCore) Ready(context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.notReady
}

func (f *fakeCore) Models(context.Context) ([]oip.RepositoryIndexEntry, error) {
	return []oip.RepositoryIndexEntry{{Name: "double"}, {Name: "sum"}}, nil
}

func (f *fakeCore) ModelMetadata(_ context.Context, model, version string) (*oip.ModelMetadata, error) {
	if md, ok := fakeModels[model]; ok && (version == "" || version == "1") {
		return md, nil
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
	f.calls++
	f.mu.Unlock()
	in := &call.Request.Inputs[0]
	switch call.Model {
	case "double":
		y := make([]float32, len(in.FP32))
		for i, v := range in.FP32 {
			y[i] = 2 * v
		}
		return &oip.InferenceResponse{Outputs: []oip.Tensor{oip.NewFP32("y", in.Shape, y)}}, nil
	case "sum":
		rows := in.Rows()
		sum, arg := make([]float32, rows), make([]int64, rows)
		for r := range rows {
			row := in.FP32[3*r : 3*r+3]
			for j, v := range row {
				sum[r] += v
				if v > row[arg[r]] {
					arg[r] = int64(j)
				}
			}
		}
		return &oip.InferenceResponse{Outputs: []oip.Tensor{oip.NewFP32("sum", []int64{rows}, sum),
			{Name: "argmax", Datatype: oip.DatatypeINT64, Shape: []int64{rows}, INT64: arg}}}, nil
	case "pair":
		a, b := call.Request.Input("a"), call.Request.Input("b")
		s := make([]int64, len(a.INT64))
		for i := range s {
			s[i] = a.INT64[i] + b.INT64[i]
		}
		return &oip.InferenceResponse{Outputs: []oip.Tensor{{Name: "s", Datatype: oip.DatatypeINT64, Shape: a.Shape, INT64: s}}}, nil
	case "text":
		n := make([]int64, len(in.BYTES))
		for i, s := range in.BYTES {
			n[i] = int64(len(s))
		}
		return &oip.InferenceResponse{Outputs: []oip.Tensor{{Name: "len", Datatype: oip.DatatypeINT64, Shape: in.Shape, INT64: n}}}, nil
	case "busy":
		return nil, oip.WithRetryAfter(fmt.Errorf("%w: queue full", oip.ErrOverloaded), 2*time.Second)
	}
	return nil, fmt.Errorf("%w: %q cannot infer", oip.ErrUnavailable, call.Model)
}
