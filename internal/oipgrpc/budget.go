package oipgrpc

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"

	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
)

// budgetCodec is NewServer's "proto" codec when a BodyBudget is set: a ModelInfer message
// reserves its wire size before it is unmarshalled, so that a message past the budget is
// dropped as received — its bytes go back to gRPC's pool at once — instead of being copied
// into a request first (the copies of eight 60 MB messages took the gateway to 1.6 GB RSS). The
// codec cannot answer the RPC itself (gRPC turns a codec error into INTERNAL), so it leaves the
// message empty and records the outcome for the message; intercept, the outermost unary
// interceptor, picks it up, so that ModelInfer answers UNAVAILABLE with its retry-after trailer
// and metrics, and releases the reservation once the RPC is answered.
type budgetCodec struct {
	budget BodyBudget
	base   encoding.CodecV2
	held   sync.Map // *pb.ModelInferRequest → budgetHold, from Unmarshal to intercept
}

// budgetHold is a message's reservation: release it once answered, or err when refused.
type budgetHold struct {
	release func()
	err     error
}

// budgetKey marks a ModelInfer context whose message the codec has already charged (or refused).
type budgetKey struct{}

func newBudgetCodec(b BodyBudget) *budgetCodec {
	return &budgetCodec{budget: b, base: encoding.GetCodecV2("proto")}
}

func (c *budgetCodec) Name() string { return c.base.Name() }

func (c *budgetCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c *budgetCodec) Unmarshal(data mem.BufferSlice, v any) error {
	in, ok := v.(*pb.ModelInferRequest)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	release, err := c.budget.Reserve(int64(data.Len()))
	if err != nil {
		c.held.Store(in, budgetHold{err: err})
		return nil
	}
	if err := c.base.Unmarshal(data, v); err != nil {
		release()
		return err
	}
	c.held.Store(in, budgetHold{release: release})
	return nil
}

// intercept hands the codec's outcome for a ModelInfer message to the handler through its
// context and releases the reservation after it; gRPC calls it right after the codec, for
// every message the codec accepted.
func (c *budgetCodec) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	in, ok := req.(*pb.ModelInferRequest)
	if !ok {
		return handler(ctx, req)
	}
	v, ok := c.held.LoadAndDelete(in)
	if !ok {
		return handler(ctx, req)
	}
	h := v.(budgetHold)
	if h.release != nil {
		defer h.release()
	}
	return handler(context.WithValue(ctx, budgetKey{}, h), req)
}

// charged returns the codec's outcome for the RPC's message, if it charged it.
func charged(ctx context.Context) (budgetHold, bool) {
	h, ok := ctx.Value(budgetKey{}).(budgetHold)
	return h, ok
}
