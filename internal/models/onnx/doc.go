// Package onnx writes and reads the subset of the ONNX ModelProto (IR version 8, opset 13) that
// sloserve's models use, with google.golang.org/protobuf/encoding/protowire only.
package onnx
