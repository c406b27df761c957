package telemetry

import (
	"context"
	"log/slog"
	"math"
	"path"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// MetadataRequestID is the gRPC metadata key of the request id (HeaderRequestID's lower-case
// spelling, as gRPC metadata keys are): accepted from the client, else generated, and sent back
// in the response header metadata.
const MetadataRequestID = "x-request-id"

// UnaryServerInterceptor is Middleware for gRPC unary calls: the request id (x-request-id
// metadata when usable, else a new one) goes into the call's context and the response header;
// the W3C trace context (traceparent, tracestate, baggage metadata) is extracted with o.Tracing,
// so the gateway's call to the worker continues the client's trace as over REST; and the access
// log line (method, route = the RPC's name, model, code, status = its REST equivalent's class,
// duration, request id, trace id) is written for every server-side failure (Internal, Unknown,
// DataLoss, Unavailable, DeadlineExceeded: Warn) and a SampleRatio of the other calls.
func UnaryServerInterceptor(o AccessLogOptions) grpc.UnaryServerInterceptor {
	var n atomic.Uint64
	ratio := min(max(o.SampleRatio, 0), 1)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		md, _ := metadata.FromIncomingContext(ctx)
		id := first(md.Get(MetadataRequestID))
		if !validRequestID(id) {
			id = newRequestID()
		}
		_ = grpc.SetHeader(ctx, metadata.Pairs(MetadataRequestID, id)) // fails only once headers are sent
		ctx = WithRequestID(ctx, id)
		route := path.Base(info.FullMethod)
		var span trace.Span
		if o.Tracing != nil {
			ctx = o.Tracing.prop.Extract(ctx, metadataCarrier(md))
			ctx, span = o.Tracing.tracer.Start(ctx, "gRPC "+route, trace.WithSpanKind(trace.SpanKindServer))
		}
		resp, err := handler(ctx, req)
		code := status.Code(err)
		failed := serverFailure(code)
		if span != nil {
			if span.IsRecording() {
				span.SetAttributes(attribute.String("rpc.system", "grpc"), attribute.String("rpc.method", info.FullMethod),
					attribute.String("sloserve.model", modelOf(req)), attribute.Int("rpc.grpc.status_code", int(code)),
					attribute.String("sloserve.request_id", id))
				if failed {
					span.SetStatus(otelcodes.Error, code.String())
				}
			}
			span.End()
		}
		if o.Logger == nil {
			return resp, err
		}
		sampled := false
		if !failed && ratio > 0 {
			k := n.Add(1)
			sampled = ratio == 1 || math.Floor(float64(k)*ratio) > math.Floor(float64(k-1)*ratio)
		}
		if !failed && !sampled {
			return resp, err
		}
		level := slog.LevelInfo
		if failed {
			level = slog.LevelWarn
		}
		remote := ""
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			remote = p.Addr.String()
		}
		o.Logger.LogAttrs(ctx, level, "access",
			slog.String("method", "gRPC"), slog.String("route", route), slog.String("model", modelOf(req)),
			slog.String("code", code.String()), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("request_id", id), slog.String("remote", remote), slog.String("trace_id", traceID(ctx)))
		return resp, err
	}
}

// serverFailure reports whether code is the server's failure (a REST 5xx), always logged.
func serverFailure(c codes.Code) bool {
	switch c {
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// modelOf returns the model a request names (ModelInfer's model_name, metadata's name), or "".
func modelOf(req any) string {
	switch r := req.(type) {
	case interface{ GetModelName() string }:
		return r.GetModelName()
	case interface{ GetName() string }:
		return r.GetName()
	}
	return ""
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// metadataCarrier lets the W3C propagator read incoming gRPC metadata.
type metadataCarrier metadata.MD

var _ propagation.TextMapCarrier = metadataCarrier(nil)

func (c metadataCarrier) Get(key string) string { return first(metadata.MD(c).Get(key)) }
func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }
func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
