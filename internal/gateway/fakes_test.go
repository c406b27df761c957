package gateway

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
)

// fixedPolicy is a hand-written size-or-wait policy: dispatch max when that many wait, else
// everything once the oldest has waited `wait`.
type fixedPolicy struct {
	max      int
	wait     time.Duration
	observed []batching.Outcome
}

func (p *fixedPolicy) Decide(q batching.Queue, now time.Time) batching.Decision {
	switch {
	case q.Len == 0:
		return batching.Decision{Reason: "empty"}
	case q.Len >= p.max:
		return batching.Decision{Dispatch: p.max, Reason: "full"}
	case !now.Before(q.Oldest.Add(p.wait)):
		return batching.Decision{Dispatch: q.Len, Reason: "timeout"}
	}
	return batching.Decision{Next: q.Oldest.Add(p.wait), Reason: "wait"}
}

func (p *fixedPolicy) Observe(o batching.Outcome, now time.Time) {
	o.Arrivals = nil
	p.observed = append(p.observed, o)
}

func (p *fixedPolicy) MaxBatch() int { return p.max }

// fakeBackend serves a batch after service(n) of (virtual) time; each request's answer echoes
// its id. It records the batch sizes per instance address.
type fakeBackend struct {
	service func(n int) time.Duration
	err     error

	mu      sync.Mutex
	batches map[string][]int
	started chan struct{} // if non-nil, receives one value per batch started
}

func (f *fakeBackend) Infer(ctx context.Context, addr, model string, reqs []*Request) (BatchResult, error) {
	f.mu.Lock()
	if f.batches == nil {
		f.batches = map[string][]int{}
	}
	f.batches[addr] = append(f.batches[addr], len(reqs))
	f.mu.Unlock()
	if f.started != nil {
		f.started <- struct{}{}
	}
	d := time.Millisecond
	if f.service != nil {
		d = f.service(len(reqs))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return BatchResult{}, &BackendError{Msg: ctx.Err().Error()}
	}
	if f.err != nil {
		return BatchResult{}, f.err
	}
	res := BatchResult{ServiceTime: d}
	for _, r := range reqs {
		res.Bodies = append(res.Bodies, []byte(`{"model_name":"`+model+`","id":"`+r.ID+`","outputs":[]}`))
	}
	return res, nil
}

func (f *fakeBackend) Metadata(ctx context.Context, addr, model string) (ModelMetadataInfo, error) {
	return ModelMetadataInfo{Inputs: []TensorSpec{{Name: "x", Datatype: "FP32", Shape: []int64{-1, 2}}}}, nil
}

func (f *fakeBackend) sizes(addr string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.batches[addr]...)
}

// body returns a valid request body for a [rows, 2] FP32 input named x.
func body(id string, rows int, extra string) []byte {
	vals := make([]string, 0, 2*rows)
	for i := 0; i < 2*rows; i++ {
		vals = append(vals, strconv.Itoa(i))
	}
	return []byte(fmt.Sprintf(`{"id":%q,%s"inputs":[{"name":"x","datatype":"FP32","shape":[%d,2],"data":[%s]}]}`,
		id, extra, rows, strings.Join(vals, ",")))
}

// diff returns "" when want and got are deeply equal, else both in (-want +got) form.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("- %+v\n+ %+v", want, got)
}
