package oipgrpc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// harness is a real gRPC server on 127.0.0.1:0 over a fakeCore, with the package's Client and a
// raw generated client connected to it.
type harness struct {
	core   *fakeCore
	client *Client
	rpc    pb.GRPCInferenceServiceClient
	conn   *grpc.ClientConn

	mu  sync.Mutex
	obs []oip.Observation
}

func startServer(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{core: newFakeCore()}
	opts.Observe = func(o oip.Observation) {
		h.mu.Lock()
		h.obs = append(h.obs, o)
		h.mu.Unlock()
	}
	opts.Reflection = true
	s, err := NewServer(h.core, opts)
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
	if h.client, err = Dial(lis.Addr().String(), ClientOptions{}); err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { h.client.Close() })
	if h.conn, err = grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() { h.conn.Close() })
	h.rpc = pb.NewGRPCInferenceServiceClient(h.conn)
	return h
}

func (h *harness) observations() []oip.Observation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]oip.Observation(nil), h.obs...)
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestHealthAndMetadata(t *testing.T) {
	h := startServer(t, Options{})
	ctx := testContext(t)

	if err := h.client.Live(ctx); err != nil {
		t.Errorf("Live: %v", err)
	}
	if err := h.client.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	h.core.mu.Lock()
	h.core.notReady = true
	h.core.mu.Unlock()
	if err := h.client.Ready(ctx); !errors.Is(err, oip.ErrUnavailable) {
		t.Errorf("Ready while not ready = %v, want oip.ErrUnavailable", err)
	}
	if r, err := h.rpc.ServerReady(ctx, &pb.ServerReadyRequest{}); err != nil || r.GetReady() {
		t.Errorf("ServerReady while not ready = %v, %v; want ready=false and no error", r, err)
	}

	smd, err := h.client.ServerMetadata(ctx)
	if want := (oip.ServerMetadata{Name: "fake", Version: "0.1", Extensions: []string{"sloserve"}}); err != nil || !reflect.DeepEqual(want, smd) {
		t.Errorf("ServerMetadata = %+v, %v; (-want +got)\n-%+v\n+%+v", smd, err, want, smd)
	}
	md, err := h.client.Metadata(ctx, "sum", "")
	if err != nil || !reflect.DeepEqual(sumMetadata, md) {
		t.Errorf("Metadata(sum) = %v; (-want +got)\n-%+v\n+%+v", err, sumMetadata, md)
	}

	tests := []struct {
		name, model, version string
		want                 error
	}{
		{"ready", "sum", "", nil},
		{"ready version", "sum", "1", nil},
		{"not ready", "down", "", oip.ErrUnavailable},
		{"unknown model", "nope", "", oip.ErrModelNotFound},
		{"unknown version", "sum", "7", oip.ErrModelNotFound},
	}
	for _, tc := range tests {
		t.Run("ModelReady/"+tc.name, func(t *testing.T) {
			err := h.client.ModelReady(ctx, tc.model, tc.version)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Errorf("ModelReady(%q, %q) = %v, want %v", tc.model, tc.version, err, tc.want)
			}
		})
	}
	if _, err := h.client.Metadata(ctx, "nope", ""); status.Code(err) != codes.NotFound || !errors.Is(err, oip.ErrModelNotFound) {
		t.Errorf("Metadata(nope) = %v, want NotFound wrapping oip.ErrModelNotFound", err)
	}
}

func sumRequest() *oip.InferenceRequest {
	return &oip.InferenceRequest{
		ID:         "req-1",
		Parameters: oip.Parameters{oip.ParamLatencyMS: json.Number("150"), "tag": "a", "flag": true},
		Inputs:     []oip.Tensor{oip.NewFP32("x", []int64{2, 3}, []float32{1, 5, 2, -1, -2, -0.5})},
	}
}

func TestInfer(t *testing.T) {
	h := startServer(t, Options{})
	ctx := testContext(t)
	wantSum := oip.NewFP32("sum", []int64{2, 1}, []float32{8, -3.5})
	wantArg := oip.Tensor{Name: "argmax", Datatype: oip.DatatypeINT64, Shape: []int64{2}, INT64: []int64{1, 2}}

	tests := []struct {
		name    string
		typed   bool
		model   string
		req     *oip.InferenceRequest
		want    []oip.Tensor
		service time.Duration
	}{
		{"raw FP32 in, FP32 and INT64 out", false, "sum", sumRequest(), []oip.Tensor{wantSum, wantArg}, 1500 * time.Microsecond},
		{"typed FP32", true, "sum", sumRequest(), []oip.Tensor{wantSum, wantArg}, 1500 * time.Microsecond},
		{"requested output only", false, "sum", func() *oip.InferenceRequest {
			r := sumRequest()
			r.Outputs = []oip.RequestedOutput{{Name: "argmax"}}
			return r
		}(), []oip.Tensor{wantArg}, 1500 * time.Microsecond},
		{"raw BYTES with length prefixes", false, "echo", &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "text", Datatype: oip.DatatypeBYTES, Shape: []int64{3}, BYTES: []string{"héllo", "", "x\x00y"}}}},
			[]oip.Tensor{{Name: "text", Datatype: oip.DatatypeBYTES, Shape: []int64{3}, BYTES: []string{"héllo", "", "x\x00y"}}}, 250 * time.Microsecond},
		{"typed BYTES", true, "echo", &oip.InferenceRequest{Inputs: []oip.Tensor{{Name: "text", Datatype: oip.DatatypeBYTES, Shape: []int64{1}, BYTES: []string{"hi"}}}},
			[]oip.Tensor{{Name: "text", Datatype: oip.DatatypeBYTES, Shape: []int64{1}, BYTES: []string{"hi"}}}, 250 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := h.client
			if tc.typed {
				var err error
				if c, err = NewClient(h.conn, ClientOptions{Typed: true}); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := c.Infer(ctx, tc.model, "", tc.req)
			if err != nil {
				t.Fatalf("Infer: %v", err)
			}
			if !reflect.DeepEqual(tc.want, resp.Outputs) {
				t.Errorf("outputs (-want +got)\n-%+v\n+%+v", tc.want, resp.Outputs)
			}
			if resp.ModelName != tc.model || resp.ID != tc.req.ID {
				t.Errorf("model name, id = %q, %q; want %q, %q", resp.ModelName, resp.ID, tc.model, tc.req.ID)
			}
			if resp.ServiceTime != tc.service {
				t.Errorf("ServiceTime = %v, want %v", resp.ServiceTime, tc.service)
			}
			call := h.core.lastCall()
			if !reflect.DeepEqual(tc.req.Inputs, call.Request.Inputs) {
				t.Errorf("Core saw inputs (-want +got)\n-%+v\n+%+v", tc.req.Inputs, call.Request.Inputs)
			}
		})
	}

	t.Run("parameters and SLO reach the core", func(t *testing.T) {
		resp, err := h.client.Infer(ctx, "sum", "1", sumRequest())
		if err != nil {
			t.Fatal(err)
		}
		call := h.core.lastCall()
		wantParams := oip.Parameters{oip.ParamLatencyMS: json.Number("150"), "tag": "a", "flag": true}
		if !reflect.DeepEqual(wantParams, call.Request.Parameters) {
			t.Errorf("parameters (-want +got)\n-%#v\n+%#v", wantParams, call.Request.Parameters)
		}
		if call.SLO.Latency != 150*time.Millisecond || call.Version != "1" || call.Metadata != sumMetadata {
			t.Errorf("call SLO, version, metadata = %v, %q, %p; want 150ms, \"1\", %p", call.SLO.Latency, call.Version, call.Metadata, sumMetadata)
		}
		if want := (oip.Parameters{"batch": json.Number("2")}); !reflect.DeepEqual(want, resp.Parameters) {
			t.Errorf("response parameters (-want +got)\n-%#v\n+%#v", want, resp.Parameters)
		}
		if resp.ModelVersion != "1" {
			t.Errorf("ModelVersion = %q, want 1", resp.ModelVersion)
		}
	})

	t.Run("raw in, raw out", func(t *testing.T) {
		in, err := EncodeRequest("sum", "", sumRequest(), true)
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.rpc.ModelInfer(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.RawOutputContents) != 2 || out.Outputs[0].Contents != nil {
			t.Errorf("raw request answered with %d raw outputs and contents %v; want 2 raw, no contents", len(out.RawOutputContents), out.Outputs[0].Contents)
		}
		if want := []byte{0, 0, 0, 0x41, 0, 0, 0x60, 0xc0}; !reflect.DeepEqual(want, out.RawOutputContents[0]) {
			t.Errorf("raw sum (little-endian 8, -3.5) (-want +got)\n-%x\n+%x", want, out.RawOutputContents[0])
		}
	})

	obs := h.observations()
	if len(obs) == 0 || obs[len(obs)-1].Route != oip.RouteInfer || obs[len(obs)-1].Code != 200 || obs[len(obs)-1].Rows != 2 {
		t.Errorf("last observation = %+v, want route infer, code 200, rows 2", obs[len(obs)-1])
	}
}

func TestInferErrors(t *testing.T) {
	h := startServer(t, Options{Limits: oip.Limits{MaxBodyBytes: 1 << 20, MaxTensorElements: 100, MaxTotalElements: 100, MaxTensors: 4, MaxDepth: 8}})
	ctx := testContext(t)
	raw := func(b ...byte) [][]byte { return [][]byte{b} }
	fp32 := func(shape []int64, data ...float32) *pb.ModelInferRequest_InferInputTensor {
		return &pb.ModelInferRequest_InferInputTensor{Name: "x", Datatype: "FP32", Shape: shape, Contents: &pb.InferTensorContents{Fp32Contents: data}}
	}
	ok := fp32([]int64{1, 3}, 1, 2, 3)

	tests := []struct {
		name       string
		req        *pb.ModelInferRequest
		code       codes.Code
		sentinel   error
		retryAfter string
	}{
		{"unknown model", &pb.ModelInferRequest{ModelName: "nope", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}}, codes.NotFound, oip.ErrModelNotFound, ""},
		{"missing model name", &pb.ModelInferRequest{Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"no inputs", &pb.ModelInferRequest{ModelName: "sum"}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"wrong shape", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{fp32([]int64{1, 2}, 1, 2)}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"contents shorter than shape", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{fp32([]int64{2, 3}, 1, 2, 3)}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"contents in the wrong field", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{
			{Name: "x", Datatype: "FP32", Shape: []int64{1, 3}, Contents: &pb.InferTensorContents{Int64Contents: []int64{1, 2, 3}}}}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"raw size mismatch", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 3}}},
			RawInputContents: raw(1, 2, 3)}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"raw and contents together", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}, RawInputContents: raw(make([]byte, 12)...)}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"raw entries do not match inputs", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1, 3}}},
			RawInputContents: [][]byte{make([]byte, 12), {}}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"unsupported datatype", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP16", Shape: []int64{1, 3}}},
			RawInputContents: raw(make([]byte, 6)...)}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"negative dimension", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{fp32([]int64{-1, 3})}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"bad SLO parameter", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok},
			Parameters: map[string]*pb.InferParameter{oip.ParamLatencyMS: {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: -5}}}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"parameter without value", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok},
			Parameters: map[string]*pb.InferParameter{"p": {}}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"unknown requested output", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok},
			Outputs: []*pb.ModelInferRequest_InferRequestedOutputTensor{{Name: "logits"}}}, codes.InvalidArgument, oip.ErrBadRequest, ""},
		{"tensor over the element limit", &pb.ModelInferRequest{ModelName: "sum", Inputs: []*pb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "FP32", Shape: []int64{1000, 3}}},
			RawInputContents: raw()}, codes.ResourceExhausted, oip.ErrTooLarge, ""},
		{"overloaded", &pb.ModelInferRequest{ModelName: "overloaded", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}}, codes.ResourceExhausted, oip.ErrOverloaded, "3"},
		{"draining", &pb.ModelInferRequest{ModelName: "down", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}}, codes.Unavailable, oip.ErrUnavailable, "1"},
		{"deadline", &pb.ModelInferRequest{ModelName: "late", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}}, codes.DeadlineExceeded, oip.ErrDeadline, ""},
		{"internal", &pb.ModelInferRequest{ModelName: "broken", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}}, codes.Internal, oip.ErrInternal, ""},
		{"canceled", &pb.ModelInferRequest{ModelName: "canceled", Inputs: []*pb.ModelInferRequest_InferInputTensor{ok}}, codes.Canceled, context.Canceled, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tr metadata.MD
			_, err := h.rpc.ModelInfer(ctx, tc.req, grpc.Trailer(&tr))
			if got := status.Code(err); got != tc.code {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.code)
			}
			var got string
			if v := tr.Get(MetadataRetryAfter); len(v) > 0 {
				got = v[0]
			}
			if got != tc.retryAfter {
				t.Errorf("retry-after trailer = %q, want %q", got, tc.retryAfter)
			}
			cerr := callError("infer", err, tr)
			if !errors.Is(cerr, tc.sentinel) {
				t.Errorf("client error %v does not wrap %v", cerr, tc.sentinel)
			}
			if status.Code(cerr) != tc.code {
				t.Errorf("status.Code(client error) = %v, want %v", status.Code(cerr), tc.code)
			}
		})
	}

	t.Run("client sees retry hint", func(t *testing.T) {
		_, err := h.client.Infer(ctx, "overloaded", "", sumRequest())
		if after, ok := oip.RetryAfter(err); !ok || after != 3*time.Second || !errors.Is(err, oip.ErrOverloaded) {
			t.Errorf("Infer(overloaded) = %v, retry after %v %v; want oip.ErrOverloaded after 3s", err, after, ok)
		}
	})
}

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"bad request", oip.ErrBadRequest, codes.InvalidArgument},
		{"model not found wrapped", errors.Join(errors.New("x"), oip.ErrModelNotFound), codes.NotFound},
		{"too large", oip.ErrTooLarge, codes.ResourceExhausted},
		{"overloaded with hint", oip.WithRetryAfter(oip.ErrOverloaded, time.Second), codes.ResourceExhausted},
		{"unavailable", oip.ErrUnavailable, codes.Unavailable},
		{"deadline sentinel", oip.ErrDeadline, codes.DeadlineExceeded},
		{"context deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"context canceled", context.Canceled, codes.Canceled},
		{"grpc status", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
		{"anything else", errors.New("boom"), codes.Internal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CodeOf(tc.err); got != tc.want {
				t.Errorf("CodeOf(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestReflection(t *testing.T) {
	h := startServer(t, Options{})
	ctx := testContext(t)
	stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	found := false
	for _, n := range names {
		found = found || n == "inference.GRPCInferenceService"
	}
	if !found {
		t.Errorf("reflection lists %v, want inference.GRPCInferenceService among them", names)
	}
}

func TestNewServerRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		core oip.Core
		opts Options
	}{
		{"nil core", nil, Options{}},
		{"negative retry", newFakeCore(), Options{RetryAfter: -time.Second}},
		{"bad limits", newFakeCore(), Options{Limits: oip.Limits{MaxBodyBytes: -1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewServer(tc.core, tc.opts); err == nil {
				t.Errorf("NewServer accepted %+v", tc.opts)
			}
		})
	}
}
