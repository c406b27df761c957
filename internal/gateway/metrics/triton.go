package metrics

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

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
