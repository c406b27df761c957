package gateway

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

// OIPBackend is the Backend that speaks OIP v2 REST to instances through oip.Client: a batch is
// one request with the rows concatenated (oip.Concat) and the response split back per request
// (oip.Split).
type OIPBackend struct {
	opts    oip.ClientOptions
	mu      sync.Mutex
	clients map[string]*oip.Client
}

var _ Backend = (*OIPBackend)(nil)

// NewOIPBackend returns an OIPBackend whose clients share one keep-alive transport.
func NewOIPBackend(opts oip.ClientOptions) *OIPBackend {
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
