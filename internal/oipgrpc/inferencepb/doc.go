// Package inferencepb is the Go code generated from proto/grpc_predict_v2.proto (KServe's Open
// Inference Protocol v2 gRPC API) by scripts/gen-proto.sh; do not edit the .pb.go files.
package inferencepb
