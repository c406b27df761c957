package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
		st := b.m.tstats.snapshot()
		st.Name, st.Version = n, v
		out = append(out, st)
	}
	if model != "" && len(out) == 0 {
		return nil, fmt.Errorf("%w: %q keeps no statistics of its own (an ensemble)", ErrModelNotFound, model)
	}
	return out, nil
}

// tritonStats are one model's statistics in Triton's terms. Requests record from their own
// goroutines (atomics); batches record from the batcher goroutine (under mu, with the per-size
// map); readers take mu.
type tritonStats struct {
	success, fail, queue durationCounter
	rowsOK, last         atomic.Int64 // rows answered successfully; last answer, Unix ms
	mu                   sync.Mutex
	executions           uint64
	compute              oip.StatisticDuration
	bySize               map[int64]*oip.StatisticDuration
}

// durationCounter is an oip.StatisticDuration kept with atomics.
type durationCounter struct{ count, ns atomic.Int64 }

func (d *durationCounter) add(v time.Duration) {
	d.count.Add(1)
	d.ns.Add(int64(max(v, 0)))
}

func (d *durationCounter) load() oip.StatisticDuration {
	return oip.StatisticDuration{Count: uint64(d.count.Load()), NS: uint64(d.ns.Load())}
}

// request records one answered request of rows rows.
func (s *tritonStats) request(rows int64, arrival, done time.Time, err error) {
	if err != nil {
		s.fail.add(done.Sub(arrival))
	} else {
		s.success.add(done.Sub(arrival))
		s.rowsOK.Add(rows)
	}
	s.last.Store(done.UnixMilli())
}

// batch records one batch of rows rows executed in rtt, whose requests waited waits in the queue.
func (s *tritonStats) batch(rows int64, rtt time.Duration, waits func(yield func(time.Duration) bool)) {
	for w := range waits {
		s.queue.add(w)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.executions++
	s.compute.Add(rtt)
	if s.bySize == nil {
		s.bySize = map[int64]*oip.StatisticDuration{}
	}
	d := s.bySize[rows]
	if d == nil {
		d = &oip.StatisticDuration{}
		s.bySize[rows] = d
	}
	d.Add(rtt)
}

func (s *tritonStats) snapshot() oip.ModelStatistics {
	st := oip.ModelStatistics{InferenceCount: uint64(s.rowsOK.Load()), LastInference: uint64(max(s.last.Load(), 0)),
		InferenceStats: oip.InferStatistics{Success: s.success.load(), Fail: s.fail.load(), Queue: s.queue.load()}}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.ExecutionCount = s.executions
	st.InferenceStats.ComputeInfer = s.compute
	sizes := make([]int64, 0, len(s.bySize))
	for k := range s.bySize {
		sizes = append(sizes, k)
	}
	slices.Sort(sizes)
	st.BatchStats = make([]oip.BatchStatistics, 0, len(sizes))
	for _, k := range sizes {
		st.BatchStats = append(st.BatchStats, oip.BatchStatistics{BatchSize: uint64(k), ComputeInfer: *s.bySize[k]})
	}
	return st
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
