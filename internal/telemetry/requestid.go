package telemetry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// HeaderRequestID is the request id header: accepted from the client (or a proxy in front),
// generated when absent or unusable, and echoed on every answer.
const HeaderRequestID = "X-Request-Id"

// maxRequestIDLen bounds an accepted request id, in bytes; a longer one is replaced.
const maxRequestIDLen = 128

type ctxKey struct{}

// RequestID returns the request id Middleware put in ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// WithRequestID returns ctx carrying id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// validRequestID reports whether a client's id can be used as is: 1–128 printable ASCII bytes
// without spaces or quotes, so that it is safe in headers, logs and JSON.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// newRequestID returns 16 random bytes in hex (the size of a W3C trace id).
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AccessLogOptions configure Middleware.
type AccessLogOptions struct {
	// Logger receives the access log lines; nil logs nothing (request ids are still handled).
	Logger *slog.Logger
	// SampleRatio is the fraction of requests answered below 500 that are logged, in [0, 1]:
	// every 1/SampleRatio-th one, deterministically. Answers of 500 and above are always
	// logged (at Warn). 0 logs only those.
	SampleRatio float64
	// Route names a request's route and model for the log line (bounded route names, e.g.
	// "infer"); nil logs the path.
	Route func(r *http.Request) (route, model string)
	// Tracing, when not nil, takes the client's W3C trace context (traceparent) into the
	// request's context, where the gateway's calls to workers pick it up, and records a server
	// span when it exports.
	Tracing *Tracing
}

// Middleware gives every request an id (X-Request-Id from the client when usable, else a new
// one), puts it in the request's context (RequestID), echoes it in the answer's header, adds it
// as "request_id" to JSON error bodies ({"error": ...}), and writes the access log line: method,
// route, model, status, duration, bytes in and out and request id, for every 5xx answer and a
// SampleRatio of the others.
func Middleware(next http.Handler, o AccessLogOptions) http.Handler {
	var n atomic.Uint64
	ratio := min(max(o.SampleRatio, 0), 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(HeaderRequestID)
		if !validRequestID(id) {
			id = newRequestID()
			r.Header.Set(HeaderRequestID, id)
		}
		w.Header().Set(HeaderRequestID, id)
		route, model := r.URL.Path, ""
		if o.Route != nil {
			route, model = o.Route(r)
		}
		ctx := WithRequestID(r.Context(), id)
		var span trace.Span
		if o.Tracing != nil {
			ctx, span = o.Tracing.start(r.WithContext(ctx), r.Method+" "+route)
		}
		rw := &recorder{ResponseWriter: w, id: id}
		next.ServeHTTP(rw, r.WithContext(ctx))
		rw.finish()
		code := rw.code
		if code == 0 {
			code = http.StatusOK
		}
		if span != nil {
			if span.IsRecording() {
				span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
					attribute.String("sloserve.model", model), attribute.Int("http.response.status_code", code),
					attribute.String("sloserve.request_id", id))
				if code >= 500 {
					span.SetStatus(codes.Error, http.StatusText(code))
				}
			}
			span.End()
		}
		if o.Logger == nil {
			return
		}
		sampled := false
		if code < 500 && ratio > 0 {
			k := n.Add(1)
			sampled = ratio == 1 || math.Floor(float64(k)*ratio) > math.Floor(float64(k-1)*ratio)
		}
		if code < 500 && !sampled {
			return
		}
		level := slog.LevelInfo
		if code >= 500 {
			level = slog.LevelWarn
		}
		o.Logger.LogAttrs(r.Context(), level, "access",
			slog.String("method", r.Method), slog.String("route", route), slog.String("model", model),
			slog.Int("status", code), slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.Int64("bytes_in", max(r.ContentLength, 0)), slog.Int64("bytes", rw.bytes),
			slog.String("request_id", id), slog.String("remote", r.RemoteAddr),
			slog.String("trace_id", traceID(ctx)))
	})
}

// recorder captures an answer's status and size, and buffers a JSON error body to add the
// request id to it.
type recorder struct {
	http.ResponseWriter
	id          string
	code        int
	bytes       int64
	buffer      bool
	buf         bytes.Buffer
	wroteHeader bool
}

// maxErrorBody bounds the error body buffered to add the request id; a larger one passes as is.
const maxErrorBody = 64 << 10

func (rw *recorder) WriteHeader(code int) {
	if rw.wroteHeader {
		return
	}
	if code >= 100 && code < 200 {
		rw.ResponseWriter.WriteHeader(code)
		return
	}
	rw.wroteHeader, rw.code = true, code
	if code >= 400 && strings.HasPrefix(rw.Header().Get("Content-Type"), "application/json") {
		rw.buffer = true
		return
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(p []byte) (int, error) {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.buffer {
		if rw.buf.Len()+len(p) <= maxErrorBody {
			rw.bytes += int64(len(p))
			return rw.buf.Write(p)
		}
		rw.flushBuffer(rw.buf.Bytes())
	}
	n, err := rw.ResponseWriter.Write(p)
	rw.bytes += int64(n)
	return n, err
}

// flushBuffer sends the held header and body as they are, and stops buffering.
func (rw *recorder) flushBuffer(body []byte) {
	rw.buffer = false
	rw.ResponseWriter.WriteHeader(rw.code)
	rw.ResponseWriter.Write(body)
	rw.buf.Reset()
}

// finish sends a buffered error body with "request_id" added when it is a JSON object.
func (rw *recorder) finish() {
	if !rw.buffer {
		return
	}
	body := rw.buf.Bytes()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err == nil && obj != nil {
		if _, ok := obj["request_id"]; !ok {
			obj["request_id"], _ = json.Marshal(rw.id)
			if b, err := json.Marshal(obj); err == nil {
				body = b
				rw.Header().Set("Content-Length", strconv.Itoa(len(b)))
				rw.bytes = int64(len(b))
			}
		}
	}
	rw.flushBuffer(body)
}

// Flush implements http.Flusher for streaming answers (never buffered: they are not errors).
func (rw *recorder) Flush() {
	if rw.buffer {
		return
	}
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// traceID returns the trace id of ctx's span context, or "".
func traceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}
