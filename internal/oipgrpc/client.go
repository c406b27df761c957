package oipgrpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Client talks OIP v2 over gRPC to one server (Triton, KServe, MLServer, a sloserve gateway or
// worker) with the method set of oip.Client, so callers can switch protocols. It is safe for
// concurrent use.
type Client struct {
	rpc    pb.GRPCInferenceServiceClient
	conn   *grpc.ClientConn // owned, closed by Close; nil when the caller passed a connection
	limits oip.Limits
	raw    bool
}

// ClientOptions configures Dial and NewClient. The zero value is usable.
type ClientOptions struct {
	// Typed sends inputs as typed contents instead of raw_input_contents (raw is what Triton's
	// clients send and what is cheaper to encode).
	Typed bool
	// Limits bounds responses and tensors; zero fields take oip.DefaultLimits' values. Dial also sets the gRPC
	// message size limits to Limits.MaxBodyBytes.
	Limits oip.Limits
	// DialOptions are appended to Dial's options (the default transport is plaintext, for
	// loopback and trusted networks).
	DialOptions []grpc.DialOption
}

// Dial returns a client for the server at target (e.g. "127.0.0.1:8001"); the connection is
// made lazily. Close releases it.
func Dial(target string, opts ClientOptions) (*Client, error) {
	lim, err := clientLimits(opts.Limits)
	if err != nil {
		return nil, err
	}
	do := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(lim.MaxBodyBytes)), grpc.MaxCallSendMsgSize(int(lim.MaxBodyBytes))),
	}, WindowOptions()...)
	do = append(do, opts.DialOptions...)
	conn, err := grpc.NewClient(target, do...)
	if err != nil {
		return nil, fmt.Errorf("oipgrpc: dial %s: %w", target, err)
	}
	return &Client{rpc: pb.NewGRPCInferenceServiceClient(conn), conn: conn, limits: lim, raw: !opts.Typed}, nil
}

// NewClient returns a client over an existing connection, which the caller keeps and closes.
func NewClient(conn grpc.ClientConnInterface, opts ClientOptions) (*Client, error) {
	lim, err := clientLimits(opts.Limits)
	if err != nil {
		return nil, err
	}
	return &Client{rpc: pb.NewGRPCInferenceServiceClient(conn), limits: lim, raw: !opts.Typed}, nil
}

func clientLimits(l oip.Limits) (oip.Limits, error) {
	l = l.WithDefaults()
	if err := l.Validate(); err != nil {
		return l, fmt.Errorf("oipgrpc: client: %w", err)
	}
	if l.MaxBodyBytes > math.MaxInt32 {
		return l, fmt.Errorf("oipgrpc: client: limits.max_body_bytes: must be <= %d for gRPC, got %d", math.MaxInt32, l.MaxBodyBytes)
	}
	return l, nil
}

// Close closes the connection Dial made; it does nothing for a client from NewClient.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// Live returns nil when the server reports itself live.
func (c *Client) Live(ctx context.Context) error {
	var tr metadata.MD
	r, err := c.rpc.ServerLive(ctx, &pb.ServerLiveRequest{}, grpc.Trailer(&tr))
	if err != nil {
		return callError("server live", err, tr)
	}
	if !r.GetLive() {
		return fmt.Errorf("oipgrpc: server live: %w: server is not live", oip.ErrUnavailable)
	}
	return nil
}

// Ready returns nil when the server is ready, an error wrapping oip.ErrUnavailable when not.
func (c *Client) Ready(ctx context.Context) error {
	var tr metadata.MD
	r, err := c.rpc.ServerReady(ctx, &pb.ServerReadyRequest{}, grpc.Trailer(&tr))
	if err != nil {
		return callError("server ready", err, tr)
	}
	if !r.GetReady() {
		return fmt.Errorf("oipgrpc: server ready: %w: server is not ready", oip.ErrUnavailable)
	}
	return nil
}

// ModelReady returns nil when model (version "" = default) is ready, an error wrapping
// oip.ErrUnavailable when not and oip.ErrModelNotFound when the server does not know it.
func (c *Client) ModelReady(ctx context.Context, model, version string) error {
	var tr metadata.MD
	r, err := c.rpc.ModelReady(ctx, &pb.ModelReadyRequest{Name: model, Version: version}, grpc.Trailer(&tr))
	if err != nil {
		return callError("model ready "+model, err, tr)
	}
	if !r.GetReady() {
		return fmt.Errorf("oipgrpc: model ready: %w: model %q is not ready", oip.ErrUnavailable, model)
	}
	return nil
}

// ServerMetadata returns the server's name, version and extensions.
func (c *Client) ServerMetadata(ctx context.Context) (oip.ServerMetadata, error) {
	var tr metadata.MD
	r, err := c.rpc.ServerMetadata(ctx, &pb.ServerMetadataRequest{}, grpc.Trailer(&tr))
	if err != nil {
		return oip.ServerMetadata{}, callError("server metadata", err, tr)
	}
	return oip.ServerMetadata{Name: r.GetName(), Version: r.GetVersion(), Extensions: r.GetExtensions()}, nil
}

// Metadata returns the metadata of model (version "" = default).
func (c *Client) Metadata(ctx context.Context, model, version string) (*oip.ModelMetadata, error) {
	var tr metadata.MD
	r, err := c.rpc.ModelMetadata(ctx, &pb.ModelMetadataRequest{Name: model, Version: version}, grpc.Trailer(&tr))
	if err != nil {
		return nil, callError("model metadata "+model, err, tr)
	}
	return fromModelMetadata(r), nil
}

// Infer sends req to model (version "" = default) and decodes the answer. A non-OK status is a
// *StatusError that unwraps to the matching oip sentinel (oip.ErrOverloaded,
// oip.ErrModelNotFound, ...); oip.RetryAfter reads its retry hint. The response's ServiceTime
// comes from the MetadataServiceTime header when the server sends it.
func (c *Client) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	in, err := EncodeRequest(model, version, req, c.raw)
	if err != nil {
		return nil, fmt.Errorf("oipgrpc: infer %s: encode request: %w", model, err)
	}
	var hdr, tr metadata.MD
	r, err := c.rpc.ModelInfer(ctx, in, grpc.Header(&hdr), grpc.Trailer(&tr))
	if err != nil {
		return nil, callError("infer "+model, err, tr)
	}
	out, err := DecodeResponse(r, c.limits)
	if err != nil {
		return nil, fmt.Errorf("oipgrpc: infer %s: response: %w", model, err)
	}
	if v := hdr.Get(MetadataServiceTime); len(v) > 0 {
		if us, err := strconv.ParseInt(v[0], 10, 64); err == nil && us >= 0 {
			out.ServiceTime = time.Duration(us) * time.Microsecond
		}
	}
	return out, nil
}

// callError converts a failed call's error into a *StatusError (with the retry hint of the
// trailer, attached with oip.WithRetryAfter so that oip.RetryAfter finds it).
func callError(what string, err error, tr metadata.MD) error {
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return fmt.Errorf("oipgrpc: %s: %w", what, err)
		}
		return fmt.Errorf("oipgrpc: %s: %w: %v", what, oip.ErrInternal, err)
	}
	se := &StatusError{Code: st.Code(), Message: st.Message(), RetryAfter: parseRetryAfter(tr.Get(MetadataRetryAfter))}
	if se.RetryAfter > 0 {
		return oip.WithRetryAfter(se, se.RetryAfter)
	}
	return se
}

// WindowOptions are the client's side of NewServer's flow-control windows (StreamWindow,
// ConnWindow) and buffers, for tensors of images' size.
func WindowOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(StreamWindow),
		grpc.WithInitialConnWindowSize(ConnWindow),
		grpc.WithReadBufferSize(256 << 10),
		grpc.WithWriteBufferSize(256 << 10),
	}
}
