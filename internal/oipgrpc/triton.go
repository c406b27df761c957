package oipgrpc

import (
	"context"
	"fmt"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Triton's RPCs beyond KServe's protocol: model configuration, statistics and the model
// repository. They answer from the same oip helpers as the REST routes (oip.ConfigOf,
// oip.StatisticsOf, Core.Models, oip.RepositoryManager).

// ModelConfig answers oip.ConfigOf in Triton's ModelConfig message.
func (s *Service) ModelConfig(ctx context.Context, in *pb.ModelConfigRequest) (*pb.ModelConfigResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteModelConfig, Model: in.GetName(), Version: in.GetVersion()}
	if in.GetName() == "" {
		return nil, s.finish(ctx, obs, start, fmt.Errorf("%w: missing name", oip.ErrBadRequest))
	}
	cfg, err := oip.ConfigOf(ctx, s.core, in.GetName(), in.GetVersion())
	if err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	return &pb.ModelConfigResponse{Config: toModelConfig(cfg)}, s.finish(ctx, obs, start, nil)
}

// ModelStatistics answers oip.StatisticsOf: one model version, every version of a model (empty
// version) or every model (empty name).
func (s *Service) ModelStatistics(ctx context.Context, in *pb.ModelStatisticsRequest) (*pb.ModelStatisticsResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteModelStats, Model: in.GetName(), Version: in.GetVersion()}
	st, err := oip.StatisticsOf(ctx, s.core, in.GetName(), in.GetVersion())
	if err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	out := &pb.ModelStatisticsResponse{ModelStats: make([]*pb.ModelStatistics, len(st))}
	for i := range st {
		out.ModelStats[i] = toModelStatistics(&st[i])
	}
	return out, s.finish(ctx, obs, start, nil)
}

// RepositoryIndex answers Core.Models; ready filters the models ready for inference. sloserve has
// one repository, so repository_name is ignored.
func (s *Service) RepositoryIndex(ctx context.Context, in *pb.RepositoryIndexRequest) (*pb.RepositoryIndexResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteRepositoryIndex}
	all, err := s.core.Models(ctx)
	if err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	out := &pb.RepositoryIndexResponse{Models: make([]*pb.RepositoryIndexResponse_ModelIndex, 0, len(all))}
	for _, e := range all {
		if !in.GetReady() || e.State == oip.StateReady {
			out.Models = append(out.Models, &pb.RepositoryIndexResponse_ModelIndex{Name: e.Name, Version: e.Version, State: e.State, Reason: e.Reason})
		}
	}
	return out, s.finish(ctx, obs, start, nil)
}

// RepositoryModelLoad calls the Core's oip.RepositoryManager.LoadModel; UNIMPLEMENTED when the
// Core has none.
func (s *Service) RepositoryModelLoad(ctx context.Context, in *pb.RepositoryModelLoadRequest) (*pb.RepositoryModelLoadResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteRepositoryLoad, Model: in.GetModelName()}
	rm, ok := s.core.(oip.RepositoryManager)
	if !ok {
		return nil, s.finish(ctx, obs, start, status.Error(codes.Unimplemented, "this server does not load models at run time"))
	}
	if in.GetModelName() == "" {
		return nil, s.finish(ctx, obs, start, fmt.Errorf("%w: missing model_name", oip.ErrBadRequest))
	}
	params, err := fromRepositoryParams(in.GetParameters())
	if err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	if err := rm.LoadModel(ctx, in.GetModelName(), params); err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	return &pb.RepositoryModelLoadResponse{}, s.finish(ctx, obs, start, nil)
}

// RepositoryModelUnload calls the Core's oip.RepositoryManager.UnloadModel; UNIMPLEMENTED when
// the Core has none. Parameters (Triton's unload_dependents) are accepted and not used.
func (s *Service) RepositoryModelUnload(ctx context.Context, in *pb.RepositoryModelUnloadRequest) (*pb.RepositoryModelUnloadResponse, error) {
	start := s.opts.Now()
	obs := oip.Observation{Route: oip.RouteRepositoryUnload, Model: in.GetModelName()}
	rm, ok := s.core.(oip.RepositoryManager)
	if !ok {
		return nil, s.finish(ctx, obs, start, status.Error(codes.Unimplemented, "this server does not unload models at run time"))
	}
	if in.GetModelName() == "" {
		return nil, s.finish(ctx, obs, start, fmt.Errorf("%w: missing model_name", oip.ErrBadRequest))
	}
	if _, err := fromRepositoryParams(in.GetParameters()); err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	if err := rm.UnloadModel(ctx, in.GetModelName()); err != nil {
		return nil, s.finish(ctx, obs, start, err)
	}
	return &pb.RepositoryModelUnloadResponse{}, s.finish(ctx, obs, start, nil)
}

// fromRepositoryParams converts repository parameters for oip.RepositoryManager: bool, int64,
// string as they are, bytes as []byte (Triton's "file:…" contents). A parameter with no value
// wraps oip.ErrBadRequest.
func fromRepositoryParams(in map[string]*pb.ModelRepositoryParameter) (map[string]any, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		switch c := v.GetParameterChoice().(type) {
		case *pb.ModelRepositoryParameter_BoolParam:
			out[k] = c.BoolParam
		case *pb.ModelRepositoryParameter_Int64Param:
			out[k] = c.Int64Param
		case *pb.ModelRepositoryParameter_StringParam:
			out[k] = c.StringParam
		case *pb.ModelRepositoryParameter_BytesParam:
			out[k] = c.BytesParam
		default:
			return nil, fmt.Errorf("%w: parameter %q has no value", oip.ErrBadRequest, k)
		}
	}
	return out, nil
}

// toModelConfig converts an oip.ModelConfig into Triton's message; unknown enum names become
// their zero values (TYPE_INVALID, KIND_AUTO).
func toModelConfig(c *oip.ModelConfig) *pb.ModelConfig {
	out := &pb.ModelConfig{Name: c.Name, Platform: c.Platform, Backend: c.Backend, MaxBatchSize: c.MaxBatchSize}
	for _, t := range c.Input {
		out.Input = append(out.Input, &pb.ModelInput{Name: t.Name, DataType: pb.DataType(pb.DataType_value[t.DataType]), Dims: t.Dims})
	}
	for _, t := range c.Output {
		out.Output = append(out.Output, &pb.ModelOutput{Name: t.Name, DataType: pb.DataType(pb.DataType_value[t.DataType]), Dims: t.Dims})
	}
	for _, g := range c.InstanceGroup {
		out.InstanceGroup = append(out.InstanceGroup, &pb.ModelInstanceGroup{Name: g.Name, Count: g.Count,
			Kind: pb.ModelInstanceGroup_Kind(pb.ModelInstanceGroup_Kind_value[g.Kind])})
	}
	if d := c.DynamicBatching; d != nil {
		out.DynamicBatching = &pb.ModelDynamicBatching{PreferredBatchSize: d.PreferredBatchSize, MaxQueueDelayMicroseconds: d.MaxQueueDelayMicroseconds}
	}
	return out
}

func toDuration(d oip.StatisticDuration) *pb.StatisticDuration {
	return &pb.StatisticDuration{Count: d.Count, Ns: d.NS}
}

// toModelStatistics converts oip statistics into Triton's message.
func toModelStatistics(m *oip.ModelStatistics) *pb.ModelStatistics {
	is := m.InferenceStats
	out := &pb.ModelStatistics{Name: m.Name, Version: m.Version, LastInference: m.LastInference, InferenceCount: m.InferenceCount,
		ExecutionCount: m.ExecutionCount, InferenceStats: &pb.InferStatistics{Success: toDuration(is.Success), Fail: toDuration(is.Fail),
			Queue: toDuration(is.Queue), ComputeInput: toDuration(is.ComputeInput), ComputeInfer: toDuration(is.ComputeInfer),
			ComputeOutput: toDuration(is.ComputeOutput), CacheHit: toDuration(is.CacheHit), CacheMiss: toDuration(is.CacheMiss)}}
	for _, b := range m.BatchStats {
		out.BatchStats = append(out.BatchStats, &pb.InferBatchStatistics{BatchSize: b.BatchSize, ComputeInput: toDuration(b.ComputeInput),
			ComputeInfer: toDuration(b.ComputeInfer), ComputeOutput: toDuration(b.ComputeOutput)})
	}
	return out
}
