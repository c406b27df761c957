package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// ServiceTimeHeader is the response header in which a worker reports the time it spent computing
// a batch, in microseconds; the gateway copies it to every response of the batch.
const ServiceTimeHeader = "Sloserve-Service-Time-Us"

// BatchSizeHeader is the response header in which the gateway reports how many requests were
// served together with this one.
const BatchSizeHeader = "Sloserve-Batch-Size"

// Backend sends one batch to one instance. Implementations are safe for concurrent use; the
// gateway calls Infer from one goroutine per batch in flight.
type Backend interface {
	// Infer runs reqs as one batch on the instance at addr and returns one response body per
	// request, in order. An error of type *BackendError carries the instance's HTTP status.
	Infer(ctx context.Context, addr, model string, reqs []*Request) (BatchResult, error)
	// Metadata fetches the model's OIP v2 metadata from the instance at addr.
	Metadata(ctx context.Context, addr, model string) (ModelMetadataInfo, error)
}

// ModelMetadataInfo is what the gateway learns from an instance's model metadata.
type ModelMetadataInfo struct {
	Platform string
	Inputs   []TensorSpec
	Outputs  []TensorSpec
}

// BatchResult is a backend's answer for one batch.
type BatchResult struct {
	// Bodies holds one OIP v2 response body per request of the batch.
	Bodies [][]byte
	// ServiceTime is the compute time the instance reported for the whole batch (0 if unknown).
	ServiceTime time.Duration
}

// BackendError is an instance's error answer for a batch.
type BackendError struct {
	// Status is the instance's HTTP status code; 0 when the instance could not be reached.
	Status int
	// Msg is the instance's error message, or the transport error.
	Msg string
}

func (e *BackendError) Error() string {
	if e.Status == 0 {
		return "backend unreachable: " + e.Msg
	}
	return fmt.Sprintf("backend status %d: %s", e.Status, e.Msg)
}

// HTTPBackend is the Backend that speaks OIP v2 REST to instances.
type HTTPBackend struct {
	// Client sends the requests; nil means a client with a pooled keep-alive transport.
	Client *http.Client
}

var _ Backend = (*HTTPBackend)(nil)

// NewHTTPBackend returns an HTTPBackend whose transport keeps enough idle connections per
// instance for the gateway's concurrency.
func NewHTTPBackend() *HTTPBackend {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	return &HTTPBackend{Client: &http.Client{Transport: t}}
}

func (b *HTTPBackend) client() *http.Client {
	if b.Client == nil {
		return http.DefaultClient
	}
	return b.Client
}

// Infer implements Backend. A batch of one request forwards the client's body verbatim and
// returns the instance's body verbatim; larger batches concatenate rows along the batch
// dimension and split each output back by the requests' row counts.
func (b *HTTPBackend) Infer(ctx context.Context, addr, model string, reqs []*Request) (BatchResult, error) {
	var body []byte
	if len(reqs) == 1 {
		body = reqs[0].body
	} else {
		body = encodeBatch(reqs)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, addr+"/v2/models/"+model+"/infer", bytes.NewReader(body))
	if err != nil {
		return BatchResult{}, &BackendError{Msg: err.Error()}
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := b.client().Do(hreq)
	if err != nil {
		return BatchResult{}, &BackendError{Msg: err.Error()}
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return BatchResult{}, &BackendError{Msg: "read response: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		return BatchResult{}, &BackendError{Status: resp.StatusCode, Msg: errorMessage(rb)}
	}
	res := BatchResult{}
	if us, err := strconv.ParseInt(resp.Header.Get(ServiceTimeHeader), 10, 64); err == nil && us >= 0 {
		res.ServiceTime = time.Duration(us) * time.Microsecond
	}
	if len(reqs) == 1 {
		res.Bodies = [][]byte{rb}
		return res, nil
	}
	bodies, err := splitResponse(rb, reqs)
	if err != nil {
		return BatchResult{}, &BackendError{Status: http.StatusBadGateway, Msg: err.Error()}
	}
	res.Bodies = bodies
	return res, nil
}

// Metadata implements Backend.
func (b *HTTPBackend) Metadata(ctx context.Context, addr, model string) (ModelMetadataInfo, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/v2/models/"+model, nil)
	if err != nil {
		return ModelMetadataInfo{}, err
	}
	resp, err := b.client().Do(hreq)
	if err != nil {
		return ModelMetadataInfo{}, fmt.Errorf("get model metadata: %w", err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return ModelMetadataInfo{}, fmt.Errorf("get model metadata: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return ModelMetadataInfo{}, fmt.Errorf("get model metadata: status %d: %s", resp.StatusCode, errorMessage(rb))
	}
	var md modelMetadata
	if err := json.Unmarshal(rb, &md); err != nil {
		return ModelMetadataInfo{}, fmt.Errorf("decode model metadata: %w", err)
	}
	return ModelMetadataInfo{Platform: md.Platform, Inputs: md.Inputs, Outputs: md.Outputs}, nil
}

// errorMessage extracts the "error" field of an OIP error body, or returns the body itself.
func errorMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return string(body)
}

// encodeBatch writes one OIP request whose inputs concatenate the requests' rows in order.
// All requests are compatible with the first (the batcher guarantees it).
func encodeBatch(reqs []*Request) []byte {
	size := 64
	for _, r := range reqs {
		for _, in := range r.inputs {
			size += len(in.flat) + 1
		}
	}
	buf := make([]byte, 0, size+128*len(reqs[0].inputs))
	rows := 0
	for _, r := range reqs {
		rows += r.Rows
	}
	buf = append(buf, `{"inputs":[`...)
	for i, in := range reqs[0].inputs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"name":`...)
		buf = appendJSONString(buf, in.name)
		buf = append(buf, `,"datatype":"`...)
		buf = append(buf, in.datatype...)
		buf = append(buf, `","shape":[`...)
		buf = strconv.AppendInt(buf, int64(rows), 10)
		for _, d := range in.shape[1:] {
			buf = append(buf, ',')
			buf = strconv.AppendInt(buf, d, 10)
		}
		buf = append(buf, `],"data":[`...)
		for k, r := range reqs {
			if k > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, r.inputs[i].flat...)
		}
		buf = append(buf, "]}"...)
	}
	buf = append(buf, "]}"...)
	return buf
}

func appendJSONString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(buf, b...)
}

// splitResponse cuts a batch's OIP response into one response per request: every output's
// first dimension must equal the batch's total rows; each request gets its own rows of every
// output it asked for (all outputs when it named none).
func splitResponse(body []byte, reqs []*Request) ([][]byte, error) {
	var wr inferResponse
	if err := json.Unmarshal(body, &wr); err != nil {
		return nil, fmt.Errorf("decode batch response: %w", err)
	}
	rows := 0
	for _, r := range reqs {
		rows += r.Rows
	}
	type cut struct {
		flat []byte
		offs [][2]int
		per  int // scalars per row
	}
	cuts := make([]cut, len(wr.Outputs))
	for i, o := range wr.Outputs {
		if len(o.Shape) == 0 || o.Shape[0] != int64(rows) {
			return nil, fmt.Errorf("batch response: outputs[%d].shape %v: want first dimension %d", i, o.Shape, rows)
		}
		flat, offs, err := splitScalars(o.Data)
		if err != nil {
			return nil, fmt.Errorf("batch response: outputs[%d].%v", i, err)
		}
		per := 1
		for _, d := range o.Shape[1:] {
			if d <= 0 || d > 1<<24 {
				return nil, fmt.Errorf("batch response: outputs[%d].shape %v: bad dimension", i, o.Shape)
			}
			per *= int(d)
		}
		if per <= 0 || len(offs) != per*rows {
			return nil, errors.New("batch response: output data does not match its shape")
		}
		cuts[i] = cut{flat: flat, offs: offs, per: per}
	}
	out := make([][]byte, len(reqs))
	row := 0
	for k, r := range reqs {
		resp := inferResponse{ModelName: wr.ModelName, ModelVersion: wr.ModelVersion, ID: r.ID}
		for i, o := range wr.Outputs {
			if !wanted(r.outputs, o.Name) {
				continue
			}
			c := cuts[i]
			first, last := row*c.per, (row+r.Rows)*c.per-1
			data := make([]byte, 0, c.offs[last][1]-c.offs[first][0]+2)
			data = append(data, '[')
			data = append(data, c.flat[c.offs[first][0]:c.offs[last][1]]...)
			data = append(data, ']')
			shape := append([]int64{int64(r.Rows)}, o.Shape[1:]...)
			resp.Outputs = append(resp.Outputs, wireTensor{Name: o.Name, Shape: shape, Datatype: o.Datatype, Data: data})
		}
		b, err := json.Marshal(resp)
		if err != nil {
			return nil, fmt.Errorf("encode response: %w", err)
		}
		out[k] = b
		row += r.Rows
	}
	return out, nil
}

func wanted(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}
