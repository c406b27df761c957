package telemetry

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// EnvOTLPEndpoint is the standard OpenTelemetry variable that turns on the OTLP/HTTP exporter.
const EnvOTLPEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"

// Tracing propagates W3C trace context (traceparent, tracestate) from a client through the
// gateway to the worker that serves its batch, and records spans when an exporter is
// configured. It holds its own provider and propagator (no OpenTelemetry globals are set).
type Tracing struct {
	prop     propagation.TextMapPropagator
	tracer   trace.Tracer
	shutdown func(context.Context) error
	// Exporting reports whether spans are exported (an OTLP endpoint is configured).
	Exporting bool
}

// NewTracing returns the process's tracing. With endpoint "" (the default) no span is recorded
// or exported, but an incoming traceparent is passed on unchanged to the worker, so the
// client's trace continues in anything downstream that records. With an endpoint (an
// http(s):// URL, e.g. http://127.0.0.1:4318, or the value of $OTEL_EXPORTER_OTLP_ENDPOINT)
// spans are batched to that OTLP/HTTP collector; the exporter's other OTEL_EXPORTER_OTLP_*
// variables apply.
func NewTracing(ctx context.Context, service, endpoint string) (*Tracing, error) {
	t := &Tracing{prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		shutdown: func(context.Context) error { return nil }}
	if endpoint == "" {
		t.tracer = noop.NewTracerProvider().Tracer("sloserve")
		return t, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("otlp exporter %s: %w", endpoint, err)
	}
	res := resource.NewSchemaless(semconv.ServiceName(service))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tracer, t.shutdown, t.Exporting = tp.Tracer("github.com/sloserve/sloserve"), tp.Shutdown, true
	return t, nil
}

// Shutdown flushes and stops the exporter, if any.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// start extracts the incoming trace context of r and starts the server span of the request.
func (t *Tracing) start(r *http.Request, name string) (context.Context, trace.Span) {
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
}

// Transport returns base wrapped so that each outgoing request carries the trace context of
// its context (traceparent), for the gateway's calls to its workers.
func (t *Tracing) Transport(base http.RoundTripper) http.RoundTripper {
	if t == nil {
		return base
	}
	return roundTripper{t: t, base: base}
}

type roundTripper struct {
	t    *Tracing
	base http.RoundTripper
}

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return rt.base.RoundTrip(r)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	rt.t.prop.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return rt.base.RoundTrip(r)
}

// CarryTrace returns ctx with the span context of from (the request a batch is sent for), so
// that the batch's call to its worker continues that request's trace. A batch of several
// requests continues its first request's trace.
func CarryTrace(ctx, from context.Context) context.Context {
	sc := trace.SpanContextFromContext(from)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc)
}
