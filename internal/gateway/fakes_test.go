package gateway

import (
	"context"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/sloserve/sloserve/internal/gateway/gatewaytest"
	"github.com/sloserve/sloserve/internal/oip"
)

// The helpers shared with internal/app's tests (package gatewaytest).
type fixedPolicy = gatewaytest.FixedPolicy

var (
	request = gatewaytest.Request
	body    = gatewaytest.Body
	diff    = gatewaytest.Diff
)

// fakeWorkerHandler serves model m over OIP v2 REST: y = row sums of x [N,2].
func fakeWorkerHandler() http.Handler { return gatewaytest.SumWorker("100", true) }

// fakeBackend serves a batch after service(n) of (virtual) time; each answer echoes its request's
// id. It records the batch sizes per instance address.
type fakeBackend struct {
	service func(n int) time.Duration
	err     error
	slow    map[string]time.Duration // extra service time per model
	down    map[string]bool          // instance addresses that refuse connections

	mu      sync.Mutex
	batches map[string][]int
}

func (f *fakeBackend) Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	f.mu.Lock()
	if f.batches == nil {
		f.batches = map[string][]int{}
	}
	f.batches[addr] = append(f.batches[addr], len(reqs))
	down := f.down[addr]
	f.mu.Unlock()
	if down {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	d := time.Millisecond
	if f.service != nil {
		d = f.service(len(reqs))
	}
	d += f.slow[model]
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	out := make([]*oip.InferenceResponse, len(reqs))
	for i, r := range reqs {
		out[i] = &oip.InferenceResponse{ModelName: model, ID: r.ID, ServiceTime: d}
	}
	return out, nil
}

func (f *fakeBackend) Metadata(ctx context.Context, addr, model string) (*oip.ModelMetadata, error) {
	return testMetadata(), nil
}

func (f *fakeBackend) sizes(addr string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.batches[addr]...)
}

// testMetadata is model "m": input x [N,2] FP32, output y [N,1] FP32.
func testMetadata() *oip.ModelMetadata {
	return &oip.ModelMetadata{Name: "m", Platform: "test",
		Inputs:  []oip.TensorMetadata{{Name: "x", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 2}}},
		Outputs: []oip.TensorMetadata{{Name: "y", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 1}}}}
}
