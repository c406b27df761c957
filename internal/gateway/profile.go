package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/profile"
)

// QuickProfileBatches are the batch sizes QuickProfile measures.
var QuickProfileBatches = []int{1, 4, 16, 64}

// QuickProfile measures a model's service-time curve on one instance: for each batch size of
// QuickProfileBatches, reps round trips of a zero-filled batch built from the model's metadata,
// keeping the fastest (the least disturbed by other work on a shared machine). It is what the
// controller plans with when instance_type.rps is not configured. FP32/FP64/INT32/INT64/BOOL
// inputs are supported.
func (g *Gateway) QuickProfile(ctx context.Context, model, addr string, reps int) (profile.Curve, error) {
	md, err := g.backend.Metadata(ctx, addr, model)
	if err != nil {
		return profile.Curve{}, fmt.Errorf("quick profile %s: %w", model, err)
	}
	var pts []profile.Point
	for _, n := range QuickProfileBatches {
		reqs := make([]*oip.InferenceRequest, n)
		for i := range reqs {
			r, err := zeroRequest(md)
			if err != nil {
				return profile.Curve{}, fmt.Errorf("quick profile %s: %w", model, err)
			}
			reqs[i] = r
		}
		best := time.Duration(0)
		for range max(reps, 1) {
			start := time.Now()
			if _, err := g.backend.Infer(ctx, addr, model, reqs); err != nil {
				return profile.Curve{}, fmt.Errorf("quick profile %s at batch %d: %w", model, n, err)
			}
			if d := time.Since(start); best == 0 || d < best {
				best = d
			}
		}
		pts = append(pts, profile.Point{Batch: n, Time: best})
	}
	return profile.NewCurve(pts)
}

// zeroRequest returns a one-row request of zeros for md's inputs.
func zeroRequest(md *oip.ModelMetadata) (*oip.InferenceRequest, error) {
	r := &oip.InferenceRequest{}
	for _, in := range md.Inputs {
		shape := make([]int64, len(in.Shape))
		size := int64(1)
		for i, d := range in.Shape {
			if d < 0 {
				d = 1
			}
			shape[i] = d
			size *= d
		}
		if size > 1<<24 {
			return nil, fmt.Errorf("input %s: %d elements", in.Name, size)
		}
		t := oip.Tensor{Name: in.Name, Datatype: in.Datatype, Shape: shape}
		switch in.Datatype {
		case oip.DatatypeFP32:
			t.FP32 = make([]float32, size)
		case oip.DatatypeFP64:
			t.FP64 = make([]float64, size)
		case oip.DatatypeINT32:
			t.INT32 = make([]int32, size)
		case oip.DatatypeINT64:
			t.INT64 = make([]int64, size)
		case oip.DatatypeBOOL:
			t.BOOL = make([]bool, size)
		default:
			return nil, fmt.Errorf("input %s: datatype %s not supported by the quick profile", in.Name, in.Datatype)
		}
		r.Inputs = append(r.Inputs, t)
	}
	return r, nil
}
