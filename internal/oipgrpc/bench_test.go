package oipgrpc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/sloserve/sloserve/internal/oip"
)

// benchCore serves "mnist": FP32 x[-1,784] → FP32 logits[-1,10] (zeros), so that a benchmark
// measures the protocol, not a model.
type benchCore struct{ fakeCore }

var mnistMetadata = &oip.ModelMetadata{Name: "mnist", Platform: "bench",
	Inputs:  []oip.TensorMetadata{{Name: "x", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 784}}},
	Outputs: []oip.TensorMetadata{{Name: "logits", Datatype: oip.DatatypeFP32, Shape: []int64{-1, 10}}}}

func (b *benchCore) ModelMetadata(context.Context, string, string) (*oip.ModelMetadata, error) {
	return mnistMetadata, nil
}

func (b *benchCore) Infer(_ context.Context, call *oip.Call) (*oip.InferenceResponse, error) {
	rows := call.Request.Inputs[0].Rows()
	return &oip.InferenceResponse{Outputs: []oip.Tensor{oip.NewFP32("logits", []int64{rows, 10}, make([]float32, 10*rows))}}, nil
}

// BenchmarkInfer compares one inference round trip over loopback: gRPC with raw contents, gRPC
// with typed contents, and OIP v2 REST/JSON, for a batch of 1 and 32 Fashion-MNIST images.
func BenchmarkInfer(b *testing.B) {
	core := &benchCore{}
	s, err := NewServer(core, Options{})
	if err != nil {
		b.Fatal(err)
	}
	glis, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(glis)
	defer s.Stop()
	h, _ := oip.NewHandler(core, oip.HandlerOptions{})
	hlis, _ := net.Listen("tcp", "127.0.0.1:0")
	hs := &http.Server{Handler: h}
	go hs.Serve(hlis)
	defer hs.Close()

	rawc, _ := Dial(glis.Addr().String(), ClientOptions{})
	defer rawc.Close()
	typedc, _ := Dial(glis.Addr().String(), ClientOptions{Typed: true})
	defer typedc.Close()
	restc, _ := oip.NewClient("http://"+hlis.Addr().String(), oip.ClientOptions{})
	type inferer interface {
		Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error)
	}
	clients := []struct {
		name string
		c    inferer
	}{{"grpc-raw", rawc}, {"grpc-typed", typedc}, {"rest-json", restc}}
	ctx := context.Background()
	for _, rows := range []int64{1, 32} {
		data := make([]float32, 784*rows)
		for i := range data {
			data[i] = float32(i%255) / 255
		}
		req := &oip.InferenceRequest{Inputs: []oip.Tensor{oip.NewFP32("x", []int64{rows, 784}, data)}}
		for _, c := range clients {
			b.Run(fmt.Sprintf("%s/batch=%d", c.name, rows), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.c.Infer(ctx, "mnist", "", req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDecodeRaw measures decoding one batch of 32 images from raw contents.
func BenchmarkDecodeRaw(b *testing.B) {
	t := oip.NewFP32("x", []int64{32, 784}, make([]float32, 32*784))
	raw, _ := AppendRaw(nil, &t)
	lim := oip.DefaultLimits()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		out := oip.Tensor{Name: "x", Datatype: oip.DatatypeFP32, Shape: t.Shape}
		if err := DecodeRaw(&out, raw, lim); err != nil {
			b.Fatal(err)
		}
	}
}
