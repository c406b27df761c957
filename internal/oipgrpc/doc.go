// Package oipgrpc serves and calls the Open Inference Protocol v2 over gRPC
// (inference.GRPCInferenceService) as a thin adapter over the same oip.Core as the REST handler.
package oipgrpc
