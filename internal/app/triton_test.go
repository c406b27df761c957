package app

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/config"
	"github.com/sloserve/sloserve/internal/gateway"
	"github.com/sloserve/sloserve/internal/oipgrpc"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
)

// TestTritonDayOne runs a real stack (one local worker process) with REST and gRPC behind the
// same self-signed certificate and checks what a Triton user meets first: reflection and health
// over TLS, the build version and extensions, model configuration and statistics, unknown versions
// 404 / NOT_FOUND, and a deadline no batch can meet answered 400 / INVALID_ARGUMENT, not 429.
func TestTritonDayOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	certFile, keyFile, pool := writeSelfSigned(t)
	m := config.DefaultModel("m")
	m.Instances = 1
	m.MaxRows = 8
	m.Batching.Policy = batching.PolicyFixed
	m.Batching.MaxBatch = 4
	m.Batching.MaxWait = time.Millisecond
	cfg := localStackConfig(m)
	cfg.Workers.StateDir = t.TempDir()
	cfg.Gateway.GRPCAddr = "127.0.0.1:0"
	cfg.Gateway.TLSCert, cfg.Gateway.TLSKey = certFile, keyFile
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Start(ctx, cfg, StackOptions{Env: []string{"GATEWAY_FAKE_WORKER=1"}, Build: gateway.BuildInfo{Version: "v1.2.3-test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	rest := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, st.URL+path, strings.NewReader(body))
		res, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, strings.TrimSpace(string(b))
	}
	conn, err := grpc.NewClient(st.GRPCAddr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rpc := pb.NewGRPCInferenceServiceClient(conn)

	t.Run("REST", func(t *testing.T) {
		for _, tc := range []struct {
			name, method, path, body string
			code                     int
			contains                 string
		}{
			{"server metadata", "GET", "/v2", "", 200, `{"name":"sloserve-gateway","version":"v1.2.3-test","extensions":["binary_tensor_data","parameters","model_configuration","statistics"]}`},
			{"infer version 1", "POST", "/v2/models/m/versions/1/infer", string(body("v1", 1, "")), 200, `"data":[1]`},
			{"infer unknown version", "POST", "/v2/models/m/versions/9/infer", string(body("v9", 1, "")), 404, `"error":"gateway: model not found: \"m\" has no version \"9\""`},
			{"metadata unknown version", "GET", "/v2/models/m/versions/9", "", 404, `no version \"9\"`},
			{"ready unknown version", "GET", "/v2/models/m/versions/9/ready", "", 404, `no version \"9\"`},
			{"config", "GET", "/v2/models/m/config", "", 200, `{"name":"m","platform":"test","backend":"","max_batch_size":8,"input":[{"name":"x","data_type":"TYPE_FP32","dims":[2]}],"output":[{"name":"y","data_type":"TYPE_FP32","dims":[1]}],"instance_group":[{"name":"m","kind":"KIND_MODEL","count":1}]}`},
			{"config unknown version", "GET", "/v2/models/m/versions/9/config", "", 404, `no version \"9\"`},
			{"timeout 1 µs", "POST", "/v2/models/m/infer", string(body("t", 1, `"parameters":{"timeout":1},`)), 400, `deadline is shorter than one batch`},
			{"timeout 0", "POST", "/v2/models/m/infer", string(body("t", 1, `"parameters":{"timeout":0},`)), 400, `must be a positive number`},
			{"stats", "GET", "/v2/models/m/stats", "", 200, `"inference_stats":{"success":{"count":1,`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, got := rest(tc.method, tc.path, tc.body)
				if code != tc.code || !strings.Contains(got, tc.contains) {
					t.Errorf("answer (-want +got):\n- %d …%s…\n+ %d %s", tc.code, tc.contains, code, got)
				}
			})
		}
	})

	t.Run("gRPC over TLS", func(t *testing.T) {
		h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health = %v, %v; want SERVING", h, err)
		}
		if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
			t.Errorf("health of an unknown model: %v, want NotFound", err)
		}
		stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
		lr, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range lr.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		want := []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection", "inference.GRPCInferenceService"}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("reflection services (-want +got):\n-%v\n+%v", want, names)
		}
		md, err := rpc.ServerMetadata(ctx, &pb.ServerMetadataRequest{})
		if err != nil || md.GetVersion() != "v1.2.3-test" {
			t.Errorf("ServerMetadata = %v, %v; want version v1.2.3-test", md, err)
		}
		cfg, err := rpc.ModelConfig(ctx, &pb.ModelConfigRequest{Name: "m"})
		if err != nil || cfg.GetConfig().GetMaxBatchSize() != 8 || cfg.GetConfig().GetInput()[0].GetDataType() != pb.DataType_TYPE_FP32 {
			t.Errorf("ModelConfig = %v, %v; want max_batch_size 8, input TYPE_FP32", cfg, err)
		}
		for _, tc := range []struct {
			name, version string
			params        map[string]*pb.InferParameter
			code          codes.Code
		}{
			{name: "default version"},
			{name: "version 1", version: "1"},
			{name: "unknown version", version: "7", code: codes.NotFound},
			{name: "timeout 1 µs", params: map[string]*pb.InferParameter{"timeout": {ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: 1}}}, code: codes.InvalidArgument},
		} {
			t.Run(tc.name, func(t *testing.T) {
				in, err := oipgrpc.EncodeRequest("m", tc.version, request("g", 1), true)
				if err != nil {
					t.Fatal(err)
				}
				in.Parameters = tc.params
				if _, err := rpc.ModelInfer(ctx, in); status.Code(err) != tc.code {
					t.Errorf("ModelInfer: %v, want %v", err, tc.code)
				}
			})
		}
		stats, err := rpc.ModelStatistics(ctx, &pb.ModelStatisticsRequest{Name: "m"})
		if err != nil || len(stats.GetModelStats()) != 1 {
			t.Fatalf("ModelStatistics = %v, %v", stats, err)
		}
		s := stats.GetModelStats()[0]
		// 2 REST + 2 gRPC successes; 1 REST + 1 gRPC refused for their deadline (fail).
		if s.GetInferenceStats().GetSuccess().GetCount() != 3 || s.GetInferenceCount() != 3 || s.GetExecutionCount() < 1 ||
			s.GetInferenceStats().GetFail().GetCount() != 0 {
			t.Errorf("statistics = %v; want 3 successes (1 REST + 2 gRPC), 3 rows, ≥ 1 execution", s)
		}
	})
}
