package oip

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Triton's model configuration and statistics extensions (GET /v2/models/{m}[/versions/{v}]/config
// and …/stats, and the gRPC ModelConfig and ModelStatistics RPCs): the JSON shapes are Triton's
// (docs/protocol/extension_model_configuration.md and extension_statistics.md in
// github.com/triton-inference-server/server), cut to the fields sloserve knows.

// ModelConfig is the body of GET /v2/models/{m}[/versions/{v}]/config: the subset of Triton's
// model_config.proto ModelConfig that sloserve fills, with Triton's JSON field names.
type ModelConfig struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
	Backend  string `json:"backend"`
	// MaxBatchSize is the largest batch, in rows, the model accepts; 0 means it does not batch
	// and Dims hold every dimension (else Dims leave out the batch dimension).
	MaxBatchSize int32               `json:"max_batch_size"`
	Input        []ModelConfigTensor `json:"input"`
	Output       []ModelConfigTensor `json:"output"`
	// DynamicBatching is set when the server batches requests for the model.
	DynamicBatching *DynamicBatching `json:"dynamic_batching,omitempty"`
	InstanceGroup   []InstanceGroup  `json:"instance_group,omitempty"`
}

// ModelConfigTensor is one input or output of a ModelConfig; DataType is Triton's enum name
// ("TYPE_FP32", ...; see ConfigDataType).
type ModelConfigTensor struct {
	Name     string  `json:"name"`
	DataType string  `json:"data_type"`
	Dims     []int64 `json:"dims"`
}

// DynamicBatching is Triton's ModelDynamicBatching: the server-side batcher.
type DynamicBatching struct {
	// PreferredBatchSize lists the batch sizes, in rows, the batcher aims at; may be empty.
	PreferredBatchSize []int32 `json:"preferred_batch_size,omitempty"`
	// MaxQueueDelayMicroseconds is the longest a request waits for its batch to fill, in µs.
	MaxQueueDelayMicroseconds uint64 `json:"max_queue_delay_microseconds"`
}

// InstanceGroup is Triton's ModelInstanceGroup: Count instances of Kind ("KIND_CPU", "KIND_GPU",
// "KIND_MODEL" or "KIND_AUTO").
type InstanceGroup struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Count int32  `json:"count"`
}

// ConfigDataType returns Triton's model-configuration name of d ("TYPE_FP32", …; BYTES is
// "TYPE_STRING"), or "TYPE_INVALID".
func ConfigDataType(d Datatype) string {
	switch d {
	case DatatypeFP32, DatatypeFP64, DatatypeINT32, DatatypeINT64, DatatypeBOOL:
		return "TYPE_" + string(d)
	case DatatypeBYTES:
		return "TYPE_STRING"
	}
	return "TYPE_INVALID"
}

// StatisticDuration is a cumulative count and duration (Triton's JSON: {"count", "ns"}).
type StatisticDuration struct {
	Count uint64 `json:"count"`
	NS    uint64 `json:"ns"`
}

// Add counts one occurrence lasting d (negative counts as zero).
func (s *StatisticDuration) Add(d time.Duration) {
	s.Count++
	s.NS += uint64(max(d, 0))
}

// InferStatistics are a model's cumulative request statistics, by phase.
type InferStatistics struct {
	// Success and Fail are the requests answered without and with an error, from arrival to
	// the answer.
	Success StatisticDuration `json:"success"`
	Fail    StatisticDuration `json:"fail"`
	// Queue is the time requests waited in the batch queue.
	Queue StatisticDuration `json:"queue"`
	// ComputeInput, ComputeInfer and ComputeOutput are the backend's phases; sloserve measures the
	// batch round trip to an instance as ComputeInfer and leaves the other two zero.
	ComputeInput  StatisticDuration `json:"compute_input"`
	ComputeInfer  StatisticDuration `json:"compute_infer"`
	ComputeOutput StatisticDuration `json:"compute_output"`
	// CacheHit and CacheMiss are zero: sloserve has no response cache.
	CacheHit  StatisticDuration `json:"cache_hit"`
	CacheMiss StatisticDuration `json:"cache_miss"`
}

// BatchStatistics are the statistics of the executions of one batch size, in rows.
type BatchStatistics struct {
	BatchSize     uint64            `json:"batch_size"`
	ComputeInput  StatisticDuration `json:"compute_input"`
	ComputeInfer  StatisticDuration `json:"compute_infer"`
	ComputeOutput StatisticDuration `json:"compute_output"`
}

// ModelStatistics are one model version's cumulative statistics since the server started
// serving it.
type ModelStatistics struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// LastInference is when the last request was answered, in ms since the Unix epoch; 0 if none.
	LastInference uint64 `json:"last_inference"`
	// InferenceCount is the rows answered successfully; ExecutionCount the batches executed.
	InferenceCount uint64            `json:"inference_count"`
	ExecutionCount uint64            `json:"execution_count"`
	InferenceStats InferStatistics   `json:"inference_stats"`
	BatchStats     []BatchStatistics `json:"batch_stats"`
}

// StatisticsResponse is the body of GET /v2/models[/{m}[/versions/{v}]]/stats.
type StatisticsResponse struct {
	ModelStats []ModelStatistics `json:"model_stats"`
}

// Configurer is implemented by a Core that knows its models' configuration (batching, instances).
// Without it, ConfigOf derives a configuration from the model's metadata.
type Configurer interface {
	// ModelConfig returns the configuration of a model version ("" is the default); an unknown
	// model or version wraps ErrModelNotFound.
	ModelConfig(ctx context.Context, model, version string) (*ModelConfig, error)
}

// StatisticsReporter is implemented by a Core that counts its requests. Without it, StatisticsOf
// answers zero statistics for the models the Core lists.
type StatisticsReporter interface {
	// ModelStatistics returns the statistics of one model version, of every version of a model
	// (version ""), or of every model (model ""); an unknown model or version wraps
	// ErrModelNotFound. It is called concurrently.
	ModelStatistics(ctx context.Context, model, version string) ([]ModelStatistics, error)
}

// ConfigOf returns the configuration of a model version: core's own when it implements
// Configurer, else one derived from its metadata (max_batch_size 0, dims = the metadata shape).
// The REST handler and the gRPC service both call it.
func ConfigOf(ctx context.Context, core Core, model, version string) (*ModelConfig, error) {
	if c, ok := core.(Configurer); ok {
		cfg, err := c.ModelConfig(ctx, model, version)
		if err == nil && cfg == nil {
			err = fmt.Errorf("%w: model %q has no configuration", ErrInternal, model)
		}
		return cfg, err
	}
	md, err := core.ModelMetadata(ctx, model, version)
	if err != nil {
		return nil, err
	}
	if md == nil {
		return nil, fmt.Errorf("%w: model %q has no metadata", ErrInternal, model)
	}
	return ConfigFromMetadata(md, 0), nil
}

// ConfigFromMetadata is the configuration that md implies for a model that batches up to
// maxBatch rows (0: it does not batch, and dims keep every dimension; else the first dimension
// of every tensor is the batch and is left out of dims, as in Triton).
func ConfigFromMetadata(md *ModelMetadata, maxBatch int32) *ModelConfig {
	conv := func(ts []TensorMetadata) []ModelConfigTensor {
		out := make([]ModelConfigTensor, len(ts))
		for i, t := range ts {
			dims := t.Shape
			if maxBatch > 0 && len(dims) > 0 {
				dims = dims[1:]
			}
			out[i] = ModelConfigTensor{Name: t.Name, DataType: ConfigDataType(t.Datatype), Dims: slices.Clone(dims)}
			if out[i].Dims == nil {
				out[i].Dims = []int64{}
			}
		}
		return out
	}
	return &ModelConfig{Name: md.Name, Platform: md.Platform, MaxBatchSize: maxBatch, Input: conv(md.Inputs), Output: conv(md.Outputs)}
}

// StatisticsOf returns the statistics asked for: core's own when it implements
// StatisticsReporter, else zero statistics for the model asked for (checked with
// Core.ModelMetadata) or for every model Core.Models lists.
func StatisticsOf(ctx context.Context, core Core, model, version string) ([]ModelStatistics, error) {
	if r, ok := core.(StatisticsReporter); ok {
		return r.ModelStatistics(ctx, model, version)
	}
	if model != "" {
		if _, err := core.ModelMetadata(ctx, model, version); err != nil {
			return nil, err
		}
		return []ModelStatistics{{Name: model, Version: version, BatchStats: []BatchStatistics{}}}, nil
	}
	all, err := core.Models(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ModelStatistics, 0, len(all))
	for _, e := range all {
		out = append(out, ModelStatistics{Name: e.Name, Version: e.Version, BatchStats: []BatchStatistics{}})
	}
	return out, nil
}

// Extensions returns the Triton protocol extensions the REST handler and the gRPC service serve
// over core, for ServerMetadata's extensions list: binary tensor data, request parameters, model
// configuration and statistics always, the model repository (index, load, unload) when core
// implements RepositoryManager.
func Extensions(core Core) []string {
	ext := []string{"binary_tensor_data", "parameters", "model_configuration", "statistics"}
	if _, ok := core.(RepositoryManager); ok {
		ext = append(ext, "model_repository")
	}
	return ext
}
