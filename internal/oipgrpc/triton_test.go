package oipgrpc

import (
	"context"
	"fmt"
	"math"
	"net"
	"reflect"
	"sync"
	"testing"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// serveCore serves core with NewServer(opts) on 127.0.0.1:0 and returns a connection to it.
func serveCore(t *testing.T, core oip.Core, opts Options) *grpc.ClientConn {
	t.Helper()
	s, err := NewServer(core, opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(lis) }()
	t.Cleanup(func() { s.Stop(); <-done })
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// repoCore is a fakeCore that implements oip.RepositoryManager: it records the loads and
// unloads, and knows only the models of fakeCore.
type repoCore struct {
	*fakeCore
	mu    sync.Mutex
	calls []string
}

var _ oip.RepositoryManager = (*repoCore)(nil)

func (r *repoCore) LoadModel(ctx context.Context, model string, params map[string]any) error {
	if _, err := r.ModelMetadata(ctx, model, ""); err != nil {
		return fmt.Errorf("%w: no model %q in the repository", oip.ErrNotFound, model)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("load %s %v", model, params))
	return nil
}

func (r *repoCore) UnloadModel(ctx context.Context, model string) error {
	if _, err := r.ModelMetadata(ctx, model, ""); err != nil {
		return fmt.Errorf("%w: no model %q in the repository", oip.ErrNotFound, model)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "unload "+model)
	return nil
}

func TestModelConfigRPC(t *testing.T) {
	h := startServer(t, Options{})
	ctx := testContext(t)
	tests := []struct {
		name, model, version string
		want                 *pb.ModelConfig
		code                 codes.Code
	}{
		{name: "derived from metadata", model: "sum", want: &pb.ModelConfig{Name: "sum", Platform: "fake",
			Input: []*pb.ModelInput{{Name: "x", DataType: pb.DataType_TYPE_FP32, Dims: []int64{-1, 3}}},
			Output: []*pb.ModelOutput{{Name: "sum", DataType: pb.DataType_TYPE_FP32, Dims: []int64{-1, 1}},
				{Name: "argmax", DataType: pb.DataType_TYPE_INT64, Dims: []int64{-1}}}}},
		{name: "version 1", model: "sum", version: "1", want: &pb.ModelConfig{Name: "sum", Platform: "fake",
			Input: []*pb.ModelInput{{Name: "x", DataType: pb.DataType_TYPE_FP32, Dims: []int64{-1, 3}}},
			Output: []*pb.ModelOutput{{Name: "sum", DataType: pb.DataType_TYPE_FP32, Dims: []int64{-1, 1}},
				{Name: "argmax", DataType: pb.DataType_TYPE_INT64, Dims: []int64{-1}}}}},
		{name: "BYTES is TYPE_STRING", model: "echo", want: &pb.ModelConfig{Name: "echo", Platform: "fake",
			Input:  []*pb.ModelInput{{Name: "text", DataType: pb.DataType_TYPE_STRING, Dims: []int64{-1}}},
			Output: []*pb.ModelOutput{{Name: "text", DataType: pb.DataType_TYPE_STRING, Dims: []int64{-1}}}}},
		{name: "unknown version", model: "sum", version: "7", code: codes.NotFound},
		{name: "unknown model", model: "nope", code: codes.NotFound},
		{name: "no name", code: codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.rpc.ModelConfig(ctx, &pb.ModelConfigRequest{Name: tc.model, Version: tc.version})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.code)
			}
			if tc.want != nil && !proto.Equal(resp.GetConfig(), tc.want) {
				t.Errorf("config (-want +got):\n-%v\n+%v", tc.want, resp.GetConfig())
			}
		})
	}
}

func TestModelStatisticsRPC(t *testing.T) {
	h := startServer(t, Options{})
	ctx := testContext(t)
	tests := []struct {
		name, model, version string
		want                 []string
		code                 codes.Code
	}{
		{name: "one model", model: "sum", want: []string{"sum"}},
		{name: "every model", want: []string{"sum", "echo"}},
		{name: "unknown version", model: "sum", version: "9", code: codes.NotFound},
		{name: "unknown model", model: "nope", code: codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.rpc.ModelStatistics(ctx, &pb.ModelStatisticsRequest{Name: tc.model, Version: tc.version})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.code)
			}
			var names []string
			for _, s := range resp.GetModelStats() {
				names = append(names, s.GetName())
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("model_stats names (-want +got):\n-%v\n+%v", tc.want, names)
			}
		})
	}
}

func TestRepositoryRPCs(t *testing.T) {
	ctx := testContext(t)
	plain := pb.NewGRPCInferenceServiceClient(serveCore(t, newFakeCore(), Options{}))
	rc := &repoCore{fakeCore: newFakeCore()}
	repo := pb.NewGRPCInferenceServiceClient(serveCore(t, rc, Options{}))

	idx, err := plain.RepositoryIndex(ctx, &pb.RepositoryIndexRequest{Ready: true})
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.RepositoryIndexResponse{Models: []*pb.RepositoryIndexResponse_ModelIndex{{Name: "sum", State: "READY"}, {Name: "echo", State: "READY"}}}
	if !proto.Equal(idx, want) {
		t.Errorf("RepositoryIndex (-want +got):\n-%v\n+%v", want, idx)
	}
	str := &pb.ModelRepositoryParameter{ParameterChoice: &pb.ModelRepositoryParameter_StringParam{StringParam: "{}"}}
	tests := []struct {
		name   string
		client pb.GRPCInferenceServiceClient
		unload bool
		model  string
		params map[string]*pb.ModelRepositoryParameter
		code   codes.Code
	}{
		{name: "load without a RepositoryManager", client: plain, model: "sum", code: codes.Unimplemented},
		{name: "unload without a RepositoryManager", client: plain, unload: true, model: "sum", code: codes.Unimplemented},
		{name: "load", client: repo, model: "sum", params: map[string]*pb.ModelRepositoryParameter{"config": str}},
		{name: "unload", client: repo, unload: true, model: "echo"},
		{name: "load unknown", client: repo, model: "nope", code: codes.NotFound},
		{name: "unload unknown", client: repo, unload: true, model: "nope", code: codes.NotFound},
		{name: "load no name", client: repo, code: codes.InvalidArgument},
		{name: "load empty parameter", client: repo, model: "sum", params: map[string]*pb.ModelRepositoryParameter{"x": {}}, code: codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.unload {
				_, err = tc.client.RepositoryModelUnload(ctx, &pb.RepositoryModelUnloadRequest{ModelName: tc.model, Parameters: tc.params})
			} else {
				_, err = tc.client.RepositoryModelLoad(ctx, &pb.RepositoryModelLoadRequest{ModelName: tc.model, Parameters: tc.params})
			}
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.code)
			}
		})
	}
	wantCalls := []string{"load sum map[config:{}]", "unload echo"}
	if !reflect.DeepEqual(rc.calls, wantCalls) {
		t.Errorf("RepositoryManager calls (-want +got):\n-%q\n+%q", wantCalls, rc.calls)
	}
}

func TestHealthService(t *testing.T) {
	ctx := testContext(t)
	core := newFakeCore()
	hc := healthpb.NewHealthClient(serveCore(t, core, Options{Health: true}))
	tests := []struct {
		name, service string
		notReady      bool
		want          healthpb.HealthCheckResponse_ServingStatus
		code          codes.Code
	}{
		{name: "server", want: healthpb.HealthCheckResponse_SERVING},
		{name: "inference service", service: "inference.GRPCInferenceService", want: healthpb.HealthCheckResponse_SERVING},
		{name: "server not ready", notReady: true, want: healthpb.HealthCheckResponse_NOT_SERVING},
		{name: "model", service: "sum", want: healthpb.HealthCheckResponse_SERVING},
		{name: "model not ready", service: "down", want: healthpb.HealthCheckResponse_NOT_SERVING},
		{name: "unknown", service: "nope", code: codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			core.mu.Lock()
			core.notReady = tc.notReady
			core.mu.Unlock()
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: tc.service})
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.code)
			}
			if err == nil && resp.GetStatus() != tc.want {
				t.Errorf("status = %v, want %v", resp.GetStatus(), tc.want)
			}
		})
	}
	core.mu.Lock()
	core.notReady = false
	core.mu.Unlock()
	w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch first = %v, %v; want SERVING", r, err)
	}
	l, err := hc.List(ctx, &healthpb.HealthListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.GetStatuses()) != 4 { // "", the service, sum, echo
		t.Errorf("List = %v, want 4 statuses", l.GetStatuses())
	}
}

// TestTritonParameters: Triton's double_param and uint64_param reach the Core as numbers (and the
// SLO parser reads them); a NaN double is InvalidArgument.
func TestTritonParameters(t *testing.T) {
	h := startServer(t, Options{})
	ctx := testContext(t)
	dbl := func(f float64) *pb.InferParameter {
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_DoubleParam{DoubleParam: f}}
	}
	u64 := func(u uint64) *pb.InferParameter {
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_Uint64Param{Uint64Param: u}}
	}
	tests := []struct {
		name   string
		params map[string]*pb.InferParameter
		want   oip.RequestSLO
		code   codes.Code
	}{
		{name: "uint64 timeout", params: map[string]*pb.InferParameter{"timeout": u64(250000)}, want: oip.RequestSLO{Timeout: 250e6}},
		{name: "double latency", params: map[string]*pb.InferParameter{"latency_ms": dbl(12.5)}, want: oip.RequestSLO{Latency: 12.5e6}},
		{name: "big uint64 passes", params: map[string]*pb.InferParameter{"seq": u64(math.MaxUint64)}},
		{name: "NaN double", params: map[string]*pb.InferParameter{"x": dbl(math.NaN())}, code: codes.InvalidArgument},
		{name: "negative double timeout", params: map[string]*pb.InferParameter{"timeout": dbl(-1)}, code: codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := EncodeRequest("sum", "", sumRequest(), true)
			if err != nil {
				t.Fatal(err)
			}
			in.Parameters = tc.params
			_, err = h.rpc.ModelInfer(ctx, in)
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.code)
			}
			if err == nil && h.core.lastCall().SLO != tc.want {
				t.Errorf("SLO = %+v, want %+v", h.core.lastCall().SLO, tc.want)
			}
		})
	}
}
