package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/oipgrpc"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"github.com/sloserve/sloserve/internal/slo"
	"github.com/sloserve/sloserve/internal/telemetry"
)

// TestTraceparentReachesWorker sends a request with a W3C traceparent through the gateway's
// handler (with telemetry.Middleware, no exporter) and checks that the worker's batch request
// carries the same trace id.
func TestTraceparentReachesWorker(t *testing.T) {
	g, tr, seen := tracedGateway(t)
	h, err := g.Handler(HandlerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(telemetry.Middleware(h, telemetry.AccessLogOptions{Tracing: tr, Route: routeOf}))
	t.Cleanup(s.Close)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", s.URL+"/v2/models/m/infer", bytes.NewReader(body("a", 1, "")))
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(telemetry.HeaderRequestID) == "" {
		t.Fatalf("answer %s, request id %q", resp.Status, resp.Header.Get(telemetry.HeaderRequestID))
	}
	if got := seen(); len(got) != 1 || !strings.HasPrefix(got[0], "00-"+traceID+"-") {
		t.Errorf("worker saw traceparent %q, want trace id %s", got, traceID)
	}
}

// TestGRPCRequestIDAndTraceparent sends ModelInfer with x-request-id and traceparent metadata
// through the gateway's gRPC server with telemetry.UnaryServerInterceptor (as the stack mounts
// it): the id comes back in the response header and is in the access log with the trace id, and
// the worker's batch request continues the client's trace, as over REST. A call without an id
// gets a generated one.
func TestGRPCRequestIDAndTraceparent(t *testing.T) {
	g, tr, seen := tracedGateway(t)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	gs, err := oipgrpc.NewServer(g, oipgrpc.Options{ServerOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		telemetry.UnaryServerInterceptor(telemetry.AccessLogOptions{Logger: log, SampleRatio: 1, Tracing: tr}))}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req, err := oip.DecodeRequest(body("a", 1, ""), oip.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	in, err := oipgrpc.EncodeRequest("m", "", req, true)
	if err != nil {
		t.Fatal(err)
	}
	const traceID, id = "4bf92f3577b34da6a3ce929d0e0e4736", "client-id-7"
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-request-id", id, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	var header metadata.MD
	if _, err := pb.NewGRPCInferenceServiceClient(conn).ModelInfer(ctx, in, grpc.Header(&header)); err != nil {
		t.Fatal(err)
	}
	if got := header.Get(telemetry.MetadataRequestID); len(got) != 1 || got[0] != id {
		t.Errorf("response header x-request-id %q, want %q", got, id)
	}
	if got := seen(); len(got) != 1 || !strings.HasPrefix(got[0], "00-"+traceID+"-") {
		t.Errorf("worker saw traceparent %q, want trace id %s", got, traceID)
	}
	line := logs.String()
	for _, want := range []string{"msg=access", "route=ModelInfer", "model=m", "code=OK", "request_id=" + id, "trace_id=" + traceID} {
		if !strings.Contains(line, want) {
			t.Errorf("access log %q lacks %s", line, want)
		}
	}
	header = nil
	if _, err := pb.NewGRPCInferenceServiceClient(conn).ModelInfer(context.Background(), in, grpc.Header(&header)); err != nil {
		t.Fatal(err)
	}
	if got := header.Get(telemetry.MetadataRequestID); len(got) != 1 || len(got[0]) != 32 {
		t.Errorf("generated x-request-id %q, want 32 hex digits", got)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tracedGateway returns a gateway serving model m on a sum worker through a tracing backend
// (no exporter), its tracing, and the traceparent headers the worker's batch requests carried.
func tracedGateway(t *testing.T) (*Gateway, *telemetry.Tracing, func() []string) {
	t.Helper()
	sum := sumWorker(t)
	var mu sync.Mutex
	var seen []string
	w := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			seen = append(seen, r.Header.Get("traceparent"))
			mu.Unlock()
		}
		sum.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(w.Close)
	tr, err := telemetry.NewTracing(context.Background(), "test", "")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	g, err := New(Options{Registerer: reg, Backend: NewOIPBackend(oip.ClientOptions{HTTPClient: &http.Client{Transport: tr.Transport(oip.NewTransport())}})})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddModel(Model{Name: "m", SLO: slo.DefaultSpec(), Policy: &fixedPolicy{Max: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddInstance(context.Background(), "m", Instance{ID: "w0", Addr: w.URL}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g, tr, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
