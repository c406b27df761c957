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
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/proto"
)

// Options configures NewServer and Register. The zero value is usable.
type Options struct {
	// Limits bounds messages and tensors; zero fields take oip.DefaultLimits' values. NewServer also sets the
	// gRPC receive and send size limits to Limits.MaxBodyBytes.
	Limits oip.Limits
	// RetryAfter is the hint sent in the "retry-after" trailer with ResourceExhausted
	// (overloaded) and Unavailable answers whose error carries none (oip.WithRetryAfter), in
	// whole seconds rounded up; zero means oip.DefaultRetryAfter.
	RetryAfter time.Duration
	// Observe, if set, is called once per RPC after the answer is ready, from the RPC's
	// goroutine; Code is the HTTP status the REST handler would have sent, so that one metrics
	// function serves both protocols. It must be cheap and safe for concurrent use.
	Observe func(oip.Observation)
	// Now is the clock for Call.Arrival and Observation.Elapsed; nil means time.Now.
	Now func() time.Time
	// Reflection registers the gRPC server reflection service in NewServer, so that grpcurl
	// and similar tools can list and call the service without the .proto file.
	Reflection bool
	// Health registers grpc.health.v1.Health over the core (NewHealth) in NewServer, for
	// Kubernetes gRPC probes and grpc_health_probe.
	Health bool
	// BodyBudget, if set, bounds the request bytes held at once (shared with the REST
	// handler): a ModelInfer message reserves its size once received and before it is
	// unmarshalled (NewServer's codec; ModelInfer itself when registered on another server), and
	// NewServer refuses a ModelInfer stream before its message is read while nothing of the
	// budget is free. Past it the answer is UNAVAILABLE with a retry-after trailer. gRPC reads a
	// whole message before any of this code sees it, so the messages in reception at once are
	// bounded by Limits.MaxBodyBytes and the streams open at once, not by the budget.
	BodyBudget BodyBudget
	// ServerOptions are appended to the options NewServer passes to grpc.NewServer
	// (interceptors, keepalive, credentials, ...).
	ServerOptions []grpc.ServerOption
}

// BodyBudget bounds the request bytes held at once; the owner (the gateway) shares it between
// protocols. Its methods are called concurrently from RPC goroutines and the transport's.
type BodyBudget interface {
	// Reserve takes n bytes, or returns an error wrapping oip.ErrUnavailable when they do not
	// fit; release gives them back (once).
	Reserve(n int64) (release func(), err error)
	// Free returns the bytes not reserved.
	Free() int64
}

func (o Options) withDefaults() (Options, error) {
	o.Limits = o.Limits.WithDefaults()
	if err := o.Limits.Validate(); err != nil {
		return o, fmt.Errorf("oipgrpc: %w", err)
	}
	if o.Limits.MaxBodyBytes > math.MaxInt32 {
		return o, fmt.Errorf("oipgrpc: limits.max_body_bytes: must be <= %d for gRPC, got %d", math.MaxInt32, o.Limits.MaxBodyBytes)
	}
	if o.RetryAfter < 0 {
		return o, fmt.Errorf("oipgrpc: retry_after: must be >= 0, got %v", o.RetryAfter)
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = oip.DefaultRetryAfter
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// The flow-control windows NewServer and Dial set: a stream may have StreamWindow bytes in flight
// (a 224×224×3 FP32 image is 602 KB), a connection ConnWindow.
const (
	StreamWindow = 2 << 20
	ConnWindow   = 8 << 20
)

// NewServer returns a gRPC server with inference.GRPCInferenceService over core registered (and,
// with opts.Reflection, the reflection service; with opts.Health, grpc.health.v1.Health). The caller serves it on a listener and stops it:
//
//	s, err := oipgrpc.NewServer(core, oipgrpc.Options{Reflection: true})
//	go s.Serve(lis)
//	defer s.GracefulStop()
func NewServer(core oip.Core, opts Options) (*grpc.Server, error) {
	svc, err := NewService(core, opts)
	if err != nil {
		return nil, err
	}
	o := svc.opts
	so := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(o.Limits.MaxBodyBytes)),
		grpc.MaxSendMsgSize(int(o.Limits.MaxBodyBytes)),
		// Flow-control windows sized for image tensors: grpc-go starts at 64 KiB and grows by
		// its BDP estimate, so a 600 KB request waits for several WINDOW_UPDATEs on a fresh
		// connection. Fixed windows (BDP estimation then off) let one request's tensor in at once.
		grpc.InitialWindowSize(StreamWindow),
		grpc.InitialConnWindowSize(ConnWindow),
		grpc.ReadBufferSize(256 << 10),
		grpc.WriteBufferSize(256 << 10),
	}
	if b := o.BodyBudget; b != nil {
		codec := newBudgetCodec(b)
		so = append(so, grpc.ForceServerCodecV2(codec), grpc.ChainUnaryInterceptor(codec.intercept))
		so = append(so, grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			if info.FullMethodName == pb.GRPCInferenceService_ModelInfer_FullMethodName && b.Free() <= 0 {
				return nil, status.Error(codes.Unavailable, "request bodies in flight at their byte budget")
			}
			return ctx, nil
		}))
	}
	so = append(so, o.ServerOptions...)
	s := grpc.NewServer(so...)
	pb.RegisterGRPCInferenceServiceServer(s, svc)
	if o.Health {
		healthpb.RegisterHealthServer(s, NewHealth(core))
	}
	if o.Reflection {
		reflection.Register(s)
	}
	return s, nil
}

// Register registers inference.GRPCInferenceService over core on an existing server (opts'
// Reflection, Health and ServerOptions are not used; size limits are the server's own).
func Register(s grpc.ServiceRegistrar, core oip.Core, opts Options) error {
	svc, err := NewService(core, opts)
	if err != nil {
		return err
	}
	pb.RegisterGRPCInferenceServiceServer(s, svc)
	return nil
}

// Service implements inference.GRPCInferenceService over an oip.Core: the same core, validation
// (oip.ValidateRequest, oip.ParseSLO) and output filtering as the REST handler, with errors
// mapped to gRPC codes by CodeOf. It is safe for concurrent use.
type Service struct {
	pb.UnimplementedGRPCInferenceServiceServer
	core oip.Core
	opts Options
}

var _ pb.GRPCInferenceServiceServer = (*Service)(nil)

// NewService returns the service over core, for callers that build their own grpc.Server.
func NewService(core oip.Core, opts Options) (*Service, error) {
	if core == nil {
		return nil, errors.New("oipgrpc: nil Core")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Service{core: core, opts: o}, nil
}

// finish observes the RPC and converts err into a gRPC status, with the retry-after trailer for
// ResourceExhausted and Unavailable.
func (s *Service) finish(ctx context.Context, obs oip.Observation, start time.Time, err error) error {
	if s.opts.Observe != nil {
		obs.Code = httpStatusOf(err)
		if obs.Code == 499 || (err != nil && errors.Is(ctx.Err(), context.Canceled)) {
			obs.Canceled = true
		}
		if obs.Code == 499 {
			obs.Code = 400 // as the REST handler sends it
		}
		obs.Elapsed = s.opts.Now().Sub(start)
		s.opts.Observe(obs)
	}
	if err == nil {
		return nil
	}
	code := CodeOf(err)
	if errors.Is(err, oip.ErrOverloaded) || code == codes.Unavailable {
		after, ok := oip.RetryAfter(err)
		if !ok {
			after = s.opts.RetryAfter
		}
		secs := max(1, int64(math.Ceil(after.Seconds())))
		grpc.SetTrailer(ctx, metadata.Pairs(MetadataRetryAfter, strconv.FormatInt(secs, 10)))
	}
	return status.Error(code, err.Error())
}

// ServerLive answers live while the server runs.
func (s *Service) ServerLive(ctx context.Context, _ *pb.ServerLiveRequest) (*pb.ServerLiveResponse, error) {
	start := s.opts.Now()
	return &pb.ServerLiveResponse{Live: true}, s.finish(ctx, oip.Observation{Route: oip.RouteLive}, start, nil)
}

// ServerReady answers Core.Ready (false while starting or draining; never an error, as in
// Triton).
func (s *Service) ServerReady(ctx context.Context, _ *pb.ServerReadyRequest) (*pb.ServerReadyResponse, error) {
	start := s.opts.Now()
	ready := s.core.Ready(ctx)
	return &pb.ServerReadyResponse{Ready: ready}, s.finish(ctx, oip.Observation{Route: oip.RouteReady}, start, nil)
}

// ModelReady answers Core.ModelReady; an unknown model is NotFound.
func (s *Service) ModelReady(ctx context.Context, in *pb.ModelReadyRequest) (*pb.ModelReadyResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteModelReady, Model: in.GetName(), Version: in.GetVersion()}
	ready, err := s.core.ModelReady(ctx, in.GetName(), in.GetVersion())
	if err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	return &pb.ModelReadyResponse{Ready: ready}, s.finish(ctx, obs, start, nil)
}

// ServerMetadata answers Core.ServerMetadata.
func (s *Service) ServerMetadata(ctx context.Context, _ *pb.ServerMetadataRequest) (*pb.ServerMetadataResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteServerMetadata}
	md, err := s.core.ServerMetadata(ctx)
	if err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	return &pb.ServerMetadataResponse{Name: md.Name, Version: md.Version, Extensions: md.Extensions}, s.finish(ctx, obs, start, nil)
}

// ModelMetadata answers Core.ModelMetadata.
func (s *Service) ModelMetadata(ctx context.Context, in *pb.ModelMetadataRequest) (*pb.ModelMetadataResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteModelMetadata, Model: in.GetName(), Version: in.GetVersion()}
	md, err := s.core.ModelMetadata(ctx, in.GetName(), in.GetVersion())
	if err == nil && md == nil {
		err = fmt.Errorf("%w: model %q has no metadata", oip.ErrInternal, in.GetName())
	}
	if err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	return toModelMetadata(md), s.finish(ctx, obs, start, nil)
}

// ModelInfer decodes the request (raw or typed contents), validates it against the model's
// metadata, calls Core.Infer and answers in the form the request used (raw in, raw out). The
// response's ServiceTime is sent in the MetadataServiceTime header.
func (s *Service) ModelInfer(ctx context.Context, in *pb.ModelInferRequest) (*pb.ModelInferResponse, error) {
	start := s.opts.Now()
	m, v := in.GetModelName(), in.GetModelVersion()
	obs := oip.Observation{Route: oip.RouteInfer, Model: m, Version: v}
	if h, ok := charged(ctx); ok {
		if h.err != nil {
			return nil, s.finish(ctx, obs, start, h.err)
		}
	} else if b := s.opts.BodyBudget; b != nil { // registered on a server without NewServer's codec
		release, err := b.Reserve(int64(proto.Size(in)))
		if err != nil {
			return nil, s.finish(ctx, obs, start, err)
		}
		defer release()
	}
	out, err := s.infer(ctx, in, start, &obs)
	return out, s.finish(ctx, obs, start, err)
}

func (s *Service) infer(ctx context.Context, in *pb.ModelInferRequest, arrival time.Time, obs *oip.Observation) (*pb.ModelInferResponse, error) {
	m, v := in.GetModelName(), in.GetModelVersion()
	if m == "" {
		return nil, fmt.Errorf("%w: missing model_name", oip.ErrBadRequest)
	}
	md, err := s.core.ModelMetadata(ctx, m, v)
	if err != nil {
		return nil, err
	}
	if md == nil {
		return nil, fmt.Errorf("%w: model %q has no metadata", oip.ErrInternal, m)
	}
	req, err := DecodeRequest(in, s.opts.Limits)
	if err != nil {
		return nil, err
	}
	if len(req.Inputs[0].Shape) > 0 {
		obs.Rows = req.Inputs[0].Shape[0]
	}
	if err := oip.ValidateRequest(req, md); err != nil {
		return nil, err
	}
	slo, err := oip.ParseSLO(req.Parameters)
	if err != nil {
		return nil, err
	}
	resp, err := s.core.Infer(ctx, &oip.Call{Model: m, Version: v, Request: req, Metadata: md, SLO: slo, Arrival: arrival})
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("%w: model %q returned no response", oip.ErrInternal, m)
	}
	if resp.ModelName == "" {
		resp.ModelName = m
	}
	if resp.ModelVersion == "" {
		resp.ModelVersion = v
	}
	if resp.ID == "" {
		resp.ID = req.ID
	}
	resp.Outputs = oip.FilterOutputs(resp.Outputs, req.Outputs)
	out, err := EncodeResponse(resp, len(in.GetRawInputContents()) > 0)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding response: %v", oip.ErrInternal, err)
	}
	if resp.ServiceTime > 0 {
		grpc.SetHeader(ctx, metadata.Pairs(MetadataServiceTime, strconv.FormatInt(resp.ServiceTime.Microseconds(), 10)))
	}
	return out, nil
}
