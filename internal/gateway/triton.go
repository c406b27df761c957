package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// The gateway's answers to Triton's model configuration and statistics extensions (oip.Configurer,
// oip.StatisticsReporter), and the check that refuses a per-request deadline no batch can meet.

var (
	_ oip.Configurer         = (*Gateway)(nil)
	_ oip.StatisticsReporter = (*Gateway)(nil)
)

// ModelConfig implements oip.Configurer: the configuration the model's metadata implies, with
// max_batch_size = the model's max_rows when every input's first dimension is variable (Triton's
// batch dimension, left out of dims), else 0 (dims are the full shapes); one instance group
// counting the instances that take batches. Ensembles answer their metadata's configuration.
func (g *Gateway) ModelConfig(ctx context.Context, model, version string) (*oip.ModelConfig, error) {
	md, err := g.ModelMetadata(ctx, model, version)
	if err != nil {
		return nil, err
	}
	b, err := g.batcher(model)
	if err != nil { // an ensemble
		return oip.ConfigFromMetadata(md, 0), nil
	}
	maxBatch := int32(0)
	if b.MaxRows() > 0 && b.MaxRows() <= 1<<31-1 && batchable(md) {
		maxBatch = int32(b.MaxRows())
	}
	cfg := oip.ConfigFromMetadata(md, maxBatch)
	ids, _ := g.Instances(model)
	cfg.InstanceGroup = []oip.InstanceGroup{{Name: model, Kind: "KIND_MODEL", Count: int32(len(ids))}}
	return cfg, nil
}

// batchable reports whether every input and output of md has a variable first dimension.
func batchable(md *oip.ModelMetadata) bool {
	for _, ts := range [][]oip.TensorMetadata{md.Inputs, md.Outputs} {
		for _, t := range ts {
			if len(t.Shape) == 0 || t.Shape[0] != -1 {
				return false
			}
		}
	}
	return len(md.Inputs) > 0
}

// ModelStatistics implements oip.StatisticsReporter: each model's counters since the gateway
// started serving it. Ensembles are not counted apart (their members are).
func (g *Gateway) ModelStatistics(ctx context.Context, model, version string) ([]oip.ModelStatistics, error) {
	names := []string{model}
	if model == "" {
		names = g.ModelNames()
	} else if _, err := g.ModelMetadata(ctx, model, version); err != nil && !errors.Is(err, ErrNoMetadata) {
		return nil, err
	}
	out := make([]oip.ModelStatistics, 0, len(names))
	for _, n := range names {
		b, err := g.batcher(n)
		if err != nil {
			continue // an ensemble
		}
		v := version
		if md := b.Metadata(); v == "" && md != nil && len(md.Versions) > 0 {
			v = md.Versions[0]
		}
		st := b.m.Statistics()
		st.Name, st.Version = n, v
		out = append(out, st)
	}
	if model != "" && len(out) == 0 {
		return nil, fmt.Errorf("%w: %q keeps no statistics of its own (an ensemble)", ErrModelNotFound, model)
	}
	return out, nil
}

// minRequestTimeout is the shortest per-request deadline (parameters timeout or latency_ms) the
// gateway accepts before any batch time is known: below it not even the hop to a worker on
// loopback fits (≈ 50–100 µs measured), so the request could never succeed.
const minRequestTimeout = 100 * time.Microsecond

// ErrDeadlineTooShort means a request's own deadline is shorter than its model could ever answer
// in (400: retrying cannot help, unlike the 429 of a deadline the queue ahead makes unreachable).
var ErrDeadlineTooShort = fmt.Errorf("gateway: the request's deadline is shorter than one batch of its model takes: %w", oip.ErrBadRequest)

// feasibleDeadline returns nil when a request of rows rows may meet its own deadline bound (the
// request's timeout or latency_ms): bound ≥ minRequestTimeout and, once cost is known, ≥ the
// estimated time of a batch holding only this request. It is pure.
func feasibleDeadline(bound time.Duration, rows int64, cost BatchCost) error {
	need := minRequestTimeout
	if cost.Known() {
		need = max(need, cost.Of(rows))
	}
	if bound < need {
		return fmt.Errorf("%w: %v asked, at least %v needed", ErrDeadlineTooShort, bound, need.Round(time.Microsecond))
	}
	return nil
}
