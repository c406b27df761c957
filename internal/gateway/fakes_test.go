package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/oip"
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

// request returns a request for model "m" with rows rows of x holding 0, 1, 2, ...
func request(id string, rows int) *oip.InferenceRequest {
	data := make([]float32, 2*rows)
	for i := range data {
		data[i] = float32(i)
	}
	return &oip.InferenceRequest{ID: id, Inputs: []oip.Tensor{oip.NewFP32("x", []int64{int64(rows), 2}, data)}}
}

// body returns the JSON body of request(id, rows), with extra inserted before "inputs".
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

// fakeWorkerHandler serves model m over OIP v2 REST: y = row sums of x [N,2].
func fakeWorkerHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /v2/models/m", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"m","platform":"test","inputs":[{"name":"x","datatype":"FP32","shape":[-1,2]}],"outputs":[{"name":"y","datatype":"FP32","shape":[-1,1]}]}`)
	})
	mux.HandleFunc("POST /v2/models/m/infer", func(w http.ResponseWriter, r *http.Request) {
		req, err := readSumRequest(r)
		if err != nil {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"bad input"}`)
			return
		}
		n := int(req.Input.Shape[0])
		out := make([]float64, n)
		for i := range n {
			out[i] = req.Input.Data[2*i] + req.Input.Data[2*i+1]
		}
		data, _ := json.Marshal(out)
		w.Header().Set(oip.HeaderServiceTime, "100")
		fmt.Fprintf(w, `{"model_name":"m","id":%q,"outputs":[{"name":"y","datatype":"FP32","shape":[%d,1],"data":%s}]}`, req.ID, n, data)
	})
	return mux
}
