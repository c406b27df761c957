package oipgrpc

import (
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
)

// fakeBudget is a BodyBudget of limit bytes that records its reservations.
type fakeBudget struct {
	mu                 sync.Mutex
	limit, used, asked int64
}

func (b *fakeBudget) Reserve(n int64) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = n
	if b.used+n > b.limit {
		return nil, fmt.Errorf("budget: %w", oip.ErrUnavailable)
	}
	b.used += n
	return func() { b.mu.Lock(); b.used -= n; b.mu.Unlock() }, nil
}

func (b *fakeBudget) Free() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - b.used
}

// ModelInfer reserves its message's size and releases it once answered; past the budget it is
// UNAVAILABLE with a retry-after trailer, and with nothing free the stream is refused before its
// message is read.
func TestBodyBudget(t *testing.T) {
	b := &fakeBudget{limit: 1 << 20}
	h := startServer(t, Options{BodyBudget: b})
	ctx := testContext(t)
	if _, err := h.client.Infer(ctx, "sum", "", sumRequest()); err != nil {
		t.Fatalf("infer within the budget: %v", err)
	}
	if b.asked <= 0 || b.used != 0 {
		t.Errorf("reserved %d bytes and %d are still held; want > 0 and 0", b.asked, b.used)
	}
	b.mu.Lock()
	b.used = b.limit - 10 // another request holds all but 10 bytes
	b.mu.Unlock()
	var trailer metadata.MD
	in := &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 3},
		Contents: &pb.InferTensorContents{Fp32Contents: []float32{1, 2, 3}}}}}
	_, err := h.rpc.ModelInfer(ctx, in, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable || len(trailer.Get(MetadataRetryAfter)) == 0 {
		t.Errorf("past the budget (-want +got): -Unavailable with retry-after +%v %v", status.Code(err), trailer)
	}
	b.mu.Lock()
	b.used = b.limit
	b.mu.Unlock()
	asked := b.asked
	_, err = h.rpc.ModelInfer(ctx, in)
	if status.Code(err) != codes.Unavailable || b.asked != asked {
		t.Errorf("nothing free (-want +got): -Unavailable, refused before Reserve +%v, Reserve called: %v", status.Code(err), b.asked != asked)
	}
}
