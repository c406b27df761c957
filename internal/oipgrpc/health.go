package oipgrpc

import (
	"context"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Health implements grpc.health.v1.Health over an oip.Core, so that Kubernetes gRPC probes,
// grpc_health_probe and load balancers read the server's readiness: service "" and
// "inference.GRPCInferenceService" are SERVING while Core.Ready, and a model's name is SERVING
// while Core.ModelReady for its default version; another name is NOT_FOUND. Status is read from
// the Core at each call (no cached state to keep in step); Watch re-reads it every
// HealthWatchInterval and sends each change. It is safe for concurrent use.
type Health struct {
	healthpb.UnimplementedHealthServer
	core oip.Core
}

var _ healthpb.HealthServer = (*Health)(nil)

// HealthWatchInterval is how often Health.Watch re-reads the status it streams.
const HealthWatchInterval = time.Second

// NewHealth returns the health service over core.
func NewHealth(core oip.Core) *Health { return &Health{core: core} }

func servingStatus(ok bool) healthpb.HealthCheckResponse_ServingStatus {
	if ok {
		return healthpb.HealthCheckResponse_SERVING
	}
	return healthpb.HealthCheckResponse_NOT_SERVING
}

// status returns service's status, or an error wrapping oip.ErrModelNotFound for an unknown one.
func (h *Health) status(ctx context.Context, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	if service == "" || service == pb.GRPCInferenceService_ServiceDesc.ServiceName {
		return servingStatus(h.core.Ready(ctx)), nil
	}
	ok, err := h.core.ModelReady(ctx, service, "")
	if err != nil {
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, err
	}
	return servingStatus(ok), nil
}

// Check answers the status of in.Service; an unknown service is NOT_FOUND, as the protocol asks.
func (h *Health) Check(ctx context.Context, in *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, err := h.status(ctx, in.GetService())
	if err != nil {
		return nil, status.Error(CodeOf(err), err.Error())
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// List answers the status of the server and of every model Core.Models lists.
func (h *Health) List(ctx context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	out := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	ready := servingStatus(h.core.Ready(ctx))
	out.Statuses[""] = &healthpb.HealthCheckResponse{Status: ready}
	out.Statuses[pb.GRPCInferenceService_ServiceDesc.ServiceName] = &healthpb.HealthCheckResponse{Status: ready}
	models, err := h.core.Models(ctx)
	if err != nil {
		return nil, status.Error(CodeOf(err), err.Error())
	}
	for _, m := range models {
		out.Statuses[m.Name] = &healthpb.HealthCheckResponse{Status: servingStatus(m.State == oip.StateReady)}
	}
	return out, nil
}

// Watch streams in.Service's status: at once, then on every change, until the client leaves; an
// unknown service is SERVICE_UNKNOWN (the protocol's answer for Watch) until it appears.
func (h *Health) Watch(in *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	t := time.NewTicker(HealthWatchInterval)
	defer t.Stop()
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	for {
		st, err := h.status(ctx, in.GetService())
		if err != nil && CodeOf(err) != codes.NotFound {
			return status.Error(CodeOf(err), err.Error())
		}
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
}
