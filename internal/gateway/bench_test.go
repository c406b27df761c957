package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/slo"
)

// imageBody is a [1,784] FP32 request like the demo's.
func imageBody() []byte {
	vals := make([]string, 784)
	for i := range vals {
		vals[i] = fmt.Sprintf("%.6g", float32(i%255)/255)
	}
	return []byte(`{"id":"b","inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"data":[` + strings.Join(vals, ",") + `]}]}`)
}

// BenchmarkGatewayPath measures one request through the gateway's HTTP handler (none policy) to
// a canned in-process worker: the gateway's own per-request cost plus two loopback hops.
func BenchmarkGatewayPath(b *testing.B) {
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"name":"m","platform":"t","inputs":[{"name":"input","datatype":"FP32","shape":[-1,784]}],"outputs":[{"name":"probs","datatype":"FP32","shape":[-1,10]}]}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"model_name":"m","outputs":[{"name":"probs","datatype":"FP32","shape":[1,10],"data":[0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1]}]}`)
	}))
	defer worker.Close()
	g, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close(context.Background())
	g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: batching.NewNone(), Slots: 64})
	if err := g.AddInstance(context.Background(), "m", Instance{ID: "w", Addr: worker.URL}); err != nil {
		b.Fatal(err)
	}
	h, _ := g.Handler(HandlerOptions{})
	s := httptest.NewServer(h)
	defer s.Close()
	body := imageBody()
	c := &http.Client{Transport: oip.NewTransport()}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := c.Post(s.URL+"/v2/models/m/infer", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// instantBackend answers at once: it isolates the batcher runtime's own cost.
type instantBackend struct{}

func (instantBackend) Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	out := make([]*oip.InferenceResponse, len(reqs))
	for i := range reqs {
		out[i] = &oip.InferenceResponse{ModelName: model}
	}
	return out, nil
}

func (instantBackend) Metadata(ctx context.Context, addr, model string) (*oip.ModelMetadata, error) {
	return testMetadata(), nil
}

// BenchmarkBatcherRoundTrip measures one request through the batcher runtime (queue, policy,
// dispatch, hand-over, completion) with the none policy and an instant backend, no HTTP.
func BenchmarkBatcherRoundTrip(b *testing.B) {
	g, _ := New(Options{Backend: instantBackend{}})
	defer g.Close(context.Background())
	g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: batching.NewNone(), Slots: 4})
	g.AddInstance(context.Background(), "m", Instance{ID: "i", Addr: "i"})
	call := &oip.Call{Model: "m", Request: request("r", 1)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Infer(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}
