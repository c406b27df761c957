package oip

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestHandlerConfigAndStats: Triton's model configuration and statistics routes in Triton's JSON
// shapes, derived from the metadata of a Core that implements neither Configurer nor
// StatisticsReporter.
func TestHandlerConfigAndStats(t *testing.T) {
	srv, _ := newTestServer(t, HandlerOptions{})
	const mlpConfig = `{"name":"mlp","platform":"onnx","backend":"","max_batch_size":0,` +
		`"input":[{"name":"input","data_type":"TYPE_FP32","dims":[-1,4]}],` +
		`"output":[{"name":"probs","data_type":"TYPE_FP32","dims":[-1,2]},{"name":"label","data_type":"TYPE_INT64","dims":[-1]}]}`
	const zero = `{"count":0,"ns":0}`
	zeroStats := `"last_inference":0,"inference_count":0,"execution_count":0,"inference_stats":{"success":` + zero + `,"fail":` + zero +
		`,"queue":` + zero + `,"compute_input":` + zero + `,"compute_infer":` + zero + `,"compute_output":` + zero +
		`,"cache_hit":` + zero + `,"cache_miss":` + zero + `},"batch_stats":[]`
	tests := []struct {
		name, path string
		wantCode   int
		wantBody   string
	}{
		{"config", "/v2/models/mlp/config", 200, mlpConfig},
		{"version config", "/v2/models/mlp/versions/1/config", 200, mlpConfig},
		{"unknown version config", "/v2/models/mlp/versions/9/config", 404, `{"error":"model not found: \"mlp\" version \"9\""}`},
		{"unknown model config", "/v2/models/nope/config", 404, `{"error":"model not found: \"nope\" version \"\""}`},
		{"stats", "/v2/models/mlp/stats", 200, `{"model_stats":[{"name":"mlp","version":"",` + zeroStats + `}]}`},
		{"version stats", "/v2/models/mlp/versions/1/stats", 200, `{"model_stats":[{"name":"mlp","version":"1",` + zeroStats + `}]}`},
		{"all stats", "/v2/models/stats", 200, `{"model_stats":[{"name":"mlp","version":"1",` + zeroStats + `},{"name":"cold","version":"",` + zeroStats + `}]}`},
		{"unknown version stats", "/v2/models/mlp/versions/9/stats", 404, `{"error":"model not found: \"mlp\" version \"9\""}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, srv, "GET", tc.path, "", nil)
			got := strings.TrimSpace(readAll(t, res))
			if res.StatusCode != tc.wantCode || got != tc.wantBody {
				t.Errorf("answer (-want +got):\n- %d %s\n+ %d %s", tc.wantCode, tc.wantBody, res.StatusCode, got)
			}
		})
	}
}

// repoFake is a fakeCore with a RepositoryManager, for Extensions.
type repoFake struct{ fakeCore }

func (*repoFake) LoadModel(context.Context, string, map[string]any) error { return nil }
func (*repoFake) UnloadModel(context.Context, string) error               { return nil }

func TestExtensions(t *testing.T) {
	base := []string{"binary_tensor_data", "parameters", "model_configuration", "statistics"}
	tests := []struct {
		name string
		core Core
		want []string
	}{
		{"plain core", &fakeCore{}, base},
		{"repository manager", &repoFake{}, append(append([]string{}, base...), "model_repository")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Extensions(tc.core); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Extensions (-want +got):\n-%v\n+%v", tc.want, got)
			}
		})
	}
}

func TestConfigFromMetadataBatching(t *testing.T) {
	got := ConfigFromMetadata(mlpMetadata, 8)
	if got.MaxBatchSize != 8 || !reflect.DeepEqual(got.Input[0].Dims, []int64{4}) || !reflect.DeepEqual(got.Output[1].Dims, []int64{}) {
		t.Errorf("ConfigFromMetadata(mlp, 8) = %+v, want max_batch_size 8 and dims without the batch dimension", got)
	}
	if mlpMetadata.Inputs[0].Shape[0] != -1 {
		t.Error("ConfigFromMetadata modified the metadata")
	}
}
