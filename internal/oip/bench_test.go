package oip

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// image784 returns a Fashion-MNIST-like 28×28 image scaled to [0, 1] (pixel/255).
func image784() []float32 {
	x := make([]float32, 784)
	for i := range x {
		x[i] = float32((i*37)%256) / 255
	}
	return x
}

// body784 encodes a one-image request as our encoder does (shortest float32 form).
func body784(b *testing.B) []byte {
	b.Helper()
	body, err := AppendRequest(nil, &InferenceRequest{ID: "1", Inputs: []Tensor{NewFP32("input", []int64{1, 784}, image784())}})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// body784Float64 encodes the same image as Python's json module would (float64 repr).
func body784Float64() []byte {
	b := []byte(`{"id":"1","inputs":[{"name":"input","datatype":"FP32","shape":[1,784],"data":[`)
	for i, v := range image784() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64((i*37)%256)/255, 'g', -1, 64)
		_ = v
	}
	return append(b, "]}]}"...)
}

func BenchmarkDecodeRequest784(b *testing.B) {
	body := body784(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(body, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRequest784Float64Text(b *testing.B) {
	body := body784Float64()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(body, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

// stdRequest is the same message for encoding/json, the baseline the hand-written codec replaces.
type stdRequest struct {
	ID     string `json:"id"`
	Inputs []struct {
		Name     string    `json:"name"`
		Datatype string    `json:"datatype"`
		Shape    []int64   `json:"shape"`
		Data     []float32 `json:"data"`
	} `json:"inputs"`
}

func BenchmarkDecodeRequest784EncodingJSON(b *testing.B) {
	body := body784(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var r stdRequest
		if err := json.Unmarshal(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeRequest784(b *testing.B) {
	r := &InferenceRequest{ID: "1", Inputs: []Tensor{NewFP32("input", []int64{1, 784}, image784())}}
	buf := make([]byte, 0, 16<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendRequest(buf[:0], r); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkDecodeEncode784 is the worker's per-request codec cost: decode a one-image request and
// encode a 10-class response.
func BenchmarkDecodeEncode784(b *testing.B) {
	body := body784(b)
	probs := []float32{0.01, 0.02, 0.03, 0.5, 0.1, 0.1, 0.04, 0.1, 0.05, 0.05}
	buf := make([]byte, 0, 4096)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := DecodeRequest(body, DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		resp := &InferenceResponse{ModelName: "mlp", ID: r.ID, Outputs: []Tensor{NewFP32("probabilities", []int64{1, 10}, probs)}}
		if buf, err = AppendResponse(buf[:0], resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcatSplit64 merges 64 one-image requests and splits a [64,10] response.
func BenchmarkConcatSplit64(b *testing.B) {
	reqs := make([]*InferenceRequest, 64)
	for i := range reqs {
		reqs[i] = &InferenceRequest{ID: strconv.Itoa(i), Inputs: []Tensor{NewFP32("input", []int64{1, 784}, image784())}}
	}
	resp := &InferenceResponse{ModelName: "mlp", Outputs: []Tensor{NewFP32("probabilities", []int64{64, 10}, make([]float32, 640))}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Concat(reqs); err != nil {
			b.Fatal(err)
		}
		if _, err := Split(resp, reqs); err != nil {
			b.Fatal(err)
		}
	}
}

// batch64 is the gateway's merged batch: 64 images as one [64, 784] FP32 input.
func batch64() *InferenceRequest {
	x := make([]float32, 0, 64*784)
	for range 64 {
		x = append(x, image784()...)
	}
	return &InferenceRequest{Inputs: []Tensor{NewFP32("input", []int64{64, 784}, x)}}
}

// BenchmarkBatch64 measures encode+decode of a merged [64, 784] batch, the gateway → worker hop,
// in JSON and with the binary tensor extension.
func BenchmarkBatch64(b *testing.B) {
	r := batch64()
	b.Run("json", func(b *testing.B) {
		buf := make([]byte, 0, 1<<20)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = AppendRequest(buf[:0], r); err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeRequest(buf, DefaultLimits()); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("binary", func(b *testing.B) {
		buf := make([]byte, 0, 1<<20)
		b.ReportAllocs()
		for b.Loop() {
			var hl int
			var err error
			if buf, hl, err = AppendRequestBinary(buf[:0], r); err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeRequestBinary(buf, hl, DefaultLimits()); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
}

// BenchmarkHandlerInfer784 is the shared handler's cost for one single-image request (route,
// metadata, read body, decode, validate, SLO parameters, Core.Infer of a fake, encode), without
// the network.
func BenchmarkHandlerInfer784(b *testing.B) {
	h, err := NewHandler(&benchCore{}, HandlerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	body := body784(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	rd := bytes.NewReader(body)
	req := httptest.NewRequest("POST", "/v2/models/mlp/infer", rd)
	w := &discardWriter{h: http.Header{}}
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		req.ContentLength = int64(len(body))
		clear(w.h)
		h.ServeHTTP(w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
}

type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }

// benchCore answers every request with ten fixed probabilities per row.
type benchCore struct{ fakeCore }

var benchMetadata = &ModelMetadata{Name: "mlp", Platform: "onnx",
	Inputs:  []TensorMetadata{{Name: "input", Datatype: DatatypeFP32, Shape: []int64{-1, 784}}},
	Outputs: []TensorMetadata{{Name: "probabilities", Datatype: DatatypeFP32, Shape: []int64{-1, 10}}}}

func (c *benchCore) ModelMetadata(context.Context, string, string) (*ModelMetadata, error) {
	return benchMetadata, nil
}

func (c *benchCore) Infer(_ context.Context, call *Call) (*InferenceResponse, error) {
	rows := call.Request.Inputs[0].Shape[0]
	return &InferenceResponse{Outputs: []Tensor{NewFP32("probabilities", []int64{rows, 10}, make([]float32, 10*rows))}}, nil
}
