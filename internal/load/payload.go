package load

import (
	"fmt"

	"github.com/sloserve/sloserve/internal/models/fashion"
	"github.com/sloserve/sloserve/internal/oip"
)

// ImagePayloads turns up to n images of a labelled Fashion-MNIST set into single-image requests
// for a model whose input is named input and shaped [-1, 784], each labelled with its class.
func ImagePayloads(set *fashion.Set, input string, n int) ([]Payload, error) {
	if set == nil || set.Len() == 0 {
		return nil, fmt.Errorf("image payloads: empty image set")
	}
	n = min(n, set.Len())
	out := make([]Payload, 0, n)
	var px []float32
	for i := range n {
		px = set.Floats(px[:0], i, i+1)
		req := &oip.InferenceRequest{
			ID:     fmt.Sprint("img-", i),
			Inputs: []oip.Tensor{oip.NewFP32(input, []int64{1, int64(len(px))}, px)},
		}
		b, err := oip.AppendRequest(nil, req)
		if err != nil {
			return nil, fmt.Errorf("image payloads: encode image %d: %w", i, err)
		}
		out = append(out, Payload{Body: b, Label: int(set.Labels[i])})
	}
	return out, nil
}

// BatchPayloads turns a labelled Fashion-MNIST set into requests of rows images each (as many as
// the set fills), for a model whose input is named input and shaped [-1, 784]; a payload's label
// is its first image's class.
func BatchPayloads(set *fashion.Set, input string, rows int) ([]Payload, error) {
	if set == nil || rows < 1 || set.Len() < rows {
		return nil, fmt.Errorf("batch payloads: need at least %d images and rows ≥ 1", max(rows, 1))
	}
	out := make([]Payload, 0, set.Len()/rows)
	var px []float32
	for i := 0; i+rows <= set.Len(); i += rows {
		px = set.Floats(px[:0], i, i+rows)
		req := &oip.InferenceRequest{
			ID:     fmt.Sprint("batch-", i/rows),
			Inputs: []oip.Tensor{oip.NewFP32(input, []int64{int64(rows), int64(fashion.Pixels)}, px)},
		}
		b, err := oip.AppendRequest(nil, req)
		if err != nil {
			return nil, fmt.Errorf("batch payloads: encode request %d: %w", i/rows, err)
		}
		out = append(out, Payload{Body: b, Label: int(set.Labels[i])})
	}
	return out, nil
}
