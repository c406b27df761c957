package batcher

import (
	"context"
	"net/http"
	"sync"

	"github.com/sloserve/sloserve/internal/oip"
)

// Backend sends one batch to one instance. Implementations are safe for concurrent use; the
// gateway calls Infer from one goroutine per batch in flight.
type Backend interface {
	// Infer runs reqs as one batch on the instance at addr and returns one response per
	// request, in order; each response's ServiceTime is the instance's compute time for the batch.
	Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error)
	// Metadata fetches the model's metadata from the instance at addr.
	Metadata(ctx context.Context, addr, model string) (*oip.ModelMetadata, error)
}

// Checker is implemented by backends that can check an instance's health; the gateway asks it
// when a batch was not answered in time, and benches the instance only when it fails.
type Checker interface {
	// Ready returns nil when the instance at addr answers its readiness check.
	Ready(ctx context.Context, addr string) error
}

// OIPBackend is the Backend that speaks OIP v2 REST to instances through oip.Client: a batch is
// one request with the rows concatenated (oip.Concat) and the response split back per request
// (oip.Split). Tensors travel in Triton's binary tensor data extension both ways (the client's
// own encoding is the gateway's business: it decoded the request and encodes the answer), so a
// merged batch of FP32 rows costs 4 bytes per value on the worker hop instead of its decimal
// text, and values JSON cannot carry never reach a JSON encoder.
type OIPBackend struct {
	opts    oip.ClientOptions
	mu      sync.Mutex
	clients map[string]*oip.Client
}

var (
	_ Backend = (*OIPBackend)(nil)
	_ Checker = (*OIPBackend)(nil)
)

// NewOIPBackend returns an OIPBackend whose clients share one keep-alive transport; opts'
// BinaryData is always set (see OIPBackend).
func NewOIPBackend(opts oip.ClientOptions) *OIPBackend {
	opts.BinaryData = true
	return &OIPBackend{opts: opts, clients: map[string]*oip.Client{}}
}

func (b *OIPBackend) client(addr string) (*oip.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opts.HTTPClient == nil {
		b.opts.HTTPClient = &http.Client{Transport: oip.NewTransport()}
	}
	if c, ok := b.clients[addr]; ok {
		return c, nil
	}
	c, err := oip.NewClient(addr, b.opts)
	if err != nil {
		return nil, err
	}
	b.clients[addr] = c
	return c, nil
}

// Infer implements Backend.
func (b *OIPBackend) Infer(ctx context.Context, addr, model string, reqs []*oip.InferenceRequest) ([]*oip.InferenceResponse, error) {
	c, err := b.client(addr)
	if err != nil {
		return nil, err
	}
	batch, err := oip.Concat(reqs)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 1 {
		batch = workerRequest(batch)
	}
	resp, err := c.Infer(ctx, model, "", batch)
	if err != nil {
		return nil, err
	}
	if len(reqs) == 1 {
		return []*oip.InferenceResponse{resp}, nil
	}
	return oip.Split(resp, reqs)
}

// Metadata implements Backend.
func (b *OIPBackend) Metadata(ctx context.Context, addr, model string) (*oip.ModelMetadata, error) {
	c, err := b.client(addr)
	if err != nil {
		return nil, err
	}
	return c.Metadata(ctx, model, "")
}

// workerRequest is what the worker is sent for a batch of one request: its id and inputs, the
// names of the outputs it asked for, and none of its parameters — the client's SLO and output
// encoding are the gateway's to honour (as oip.Concat does for a merged batch).
func workerRequest(r *oip.InferenceRequest) *oip.InferenceRequest {
	w := &oip.InferenceRequest{ID: r.ID, Inputs: r.Inputs}
	if len(r.Outputs) > 0 {
		w.Outputs = make([]oip.RequestedOutput, len(r.Outputs))
		for i, o := range r.Outputs {
			w.Outputs[i] = oip.RequestedOutput{Name: o.Name}
		}
	}
	return w
}

// Ready implements Checker.
func (b *OIPBackend) Ready(ctx context.Context, addr string) error {
	c, err := b.client(addr)
	if err != nil {
		return err
	}
	return c.Ready(ctx)
}
