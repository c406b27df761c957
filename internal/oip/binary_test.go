package oip

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func allTypes() []Tensor {
	return []Tensor{
		NewFP32("f", []int64{1, 3}, []float32{1.5, float32(math.Inf(-1)), -0}),
		{Name: "d", Datatype: DatatypeFP64, Shape: []int64{2}, FP64: []float64{math.Pi, -1e300}},
		{Name: "i", Datatype: DatatypeINT32, Shape: []int64{1}, INT32: []int32{-7}},
		{Name: "l", Datatype: DatatypeINT64, Shape: []int64{2}, INT64: []int64{math.MaxInt64, math.MinInt64}},
		{Name: "b", Datatype: DatatypeBOOL, Shape: []int64{3}, BOOL: []bool{true, false, true}},
		{Name: "s", Datatype: DatatypeBYTES, Shape: []int64{2}, BYTES: []string{"", "\x00\xffbin"}, Parameters: Parameters{"k": "v"}},
	}
}

func TestBinaryRoundTrip(t *testing.T) {
	req := &InferenceRequest{ID: "r", Inputs: allTypes()}
	body, hl, err := AppendRequestBinary(nil, req)
	if err != nil {
		t.Fatalf("AppendRequestBinary: %v", err)
	}
	if !bytes.Contains(body[:hl], []byte(`"binary_data_size":12`)) || bytes.Contains(body[:hl], []byte(`"data"`)) {
		t.Errorf("JSON part %s: want binary_data_size and no data", body[:hl])
	}
	got, err := DecodeRequestBinary(body, hl, DefaultLimits())
	if err != nil {
		t.Fatalf("DecodeRequestBinary: %v", err)
	}
	assertEqual(t, req, got)

	resp := &InferenceResponse{ModelName: "m", Outputs: allTypes()}
	body, hl, err = AppendResponseBinary(nil, resp)
	if err != nil {
		t.Fatalf("AppendResponseBinary: %v", err)
	}
	gotResp, err := DecodeResponseBinary(body, hl, DefaultLimits())
	if err != nil {
		t.Fatalf("DecodeResponseBinary: %v", err)
	}
	assertEqual(t, resp, gotResp)
}

func TestDecodeRequestBinaryErrors(t *testing.T) {
	f32 := func(n int) []byte { return make([]byte, 4*n) }
	head := func(js string) (string, int) { return js, len(js) }
	tests := []struct {
		name    string
		json    string
		blob    []byte
		hl      int // -1: len(json)
		wantErr error
		wantMsg string
	}{
		{"size mismatch", `{"inputs":[{"name":"x","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":4}}]}`, f32(1), -1, ErrBadRequest, "needs 8"},
		{"short section", `{"inputs":[{"name":"x","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}]}`, f32(1), -1, ErrBadRequest, "only 4 binary bytes remain"},
		{"trailing bytes", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":4}}]}`, f32(2), -1, ErrBadRequest, "4 binary bytes follow"},
		{"both data and binary", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],"parameters":{"binary_data_size":4}}]}`, f32(1), -1, ErrBadRequest, "both data and binary_data_size"},
		{"bad size", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1],"parameters":{"binary_data_size":"4"}}]}`, f32(1), -1, ErrBadRequest, "must be an integer"},
		{"bool byte", `{"inputs":[{"name":"x","datatype":"BOOL","shape":[1],"parameters":{"binary_data_size":1}}]}`, []byte{2}, -1, ErrBadRequest, "want 0 or 1"},
		{"truncated bytes", `{"inputs":[{"name":"x","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":5}}]}`, []byte{9, 0, 0, 0, 'a'}, -1, ErrBadRequest, "truncated BYTES"},
		{"header too long", `{"inputs":[]}`, nil, 99, ErrBadRequest, "outside the"},
		{"too many elements", `{"inputs":[{"name":"x","datatype":"FP32","shape":[1000000000],"parameters":{"binary_data_size":4}}]}`, f32(1), -1, ErrTooLarge, "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js, hl := head(tc.json)
			if tc.hl >= 0 {
				hl = tc.hl
			}
			_, err := DecodeRequestBinary(append([]byte(js), tc.blob...), hl, DefaultLimits())
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("DecodeRequestBinary error = %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

// TestHandlerBinary sends a binary request and asks for one output in binary, one in JSON.
func TestHandlerBinary(t *testing.T) {
	srv, _ := newTestServer(t, HandlerOptions{})
	req := &InferenceRequest{ID: "b", Inputs: []Tensor{NewFP32("input", []int64{1, 4}, []float32{0.25, 0, 0, 0})},
		Outputs: []RequestedOutput{{Name: "probs", Parameters: Parameters{ParamBinaryData: true}}, {Name: "label"}}}
	body, hl, err := AppendRequestBinary(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	res := do(t, srv, "POST", "/v2/models/mlp/infer", string(body), map[string]string{HeaderInferenceHeaderLength: strconv.Itoa(hl)})
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, raw)
	}
	rhl, err := strconv.Atoi(res.Header.Get(HeaderInferenceHeaderLength))
	if err != nil {
		t.Fatalf("response %s header: %v", HeaderInferenceHeaderLength, err)
	}
	wantJSON := `{"model_name":"mlp","id":"b","outputs":[{"name":"probs","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}},{"name":"label","datatype":"INT64","shape":[1],"data":[0]}]}`
	if got := string(raw[:rhl]); got != wantJSON {
		t.Errorf("JSON part (-want +got):\n- %s\n+ %s", wantJSON, got)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[rhl+4:])); got != 0.75 {
		t.Errorf("probs[1] = %v, want 0.75", got)
	}
}

func TestClientBinary(t *testing.T) {
	srv, core := newTestServer(t, HandlerOptions{})
	c, err := NewClient(srv.URL, ClientOptions{BinaryData: true})
	if err != nil {
		t.Fatal(err)
	}
	req := &InferenceRequest{ID: "a", Parameters: Parameters{"timeout": 5000}, Inputs: []Tensor{NewFP32("input", []int64{2, 4}, []float32{0.5, 0, 0, 0, 1, 0, 0, 0})}}
	got, err := c.Infer(context.Background(), "mlp", "", req)
	if err != nil {
		t.Fatalf("Infer: %v", err)
	}
	want := &InferenceResponse{ModelName: "mlp", ID: "a", ServiceTime: 1234 * time.Microsecond, Outputs: []Tensor{
		NewFP32("probs", []int64{2, 2}, []float32{0.5, 0.5, 1, 0}),
		{Name: "label", Datatype: DatatypeINT64, Shape: []int64{2}, INT64: []int64{0, 1}},
	}}
	assertEqual(t, want, got)
	if len(req.Parameters) != 1 {
		t.Errorf("Infer modified the caller's parameters: %v", req.Parameters)
	}
	if slo := core.calls[0].SLO; slo.Timeout != 5*time.Millisecond {
		t.Errorf("SLO through binary request = %+v, want timeout 5ms", slo)
	}
	_ = http.StatusOK
}
