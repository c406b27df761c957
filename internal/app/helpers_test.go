package app

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sloserve/sloserve/internal/batching"
	"github.com/sloserve/sloserve/internal/oip"
)

// Test helpers shared with package gateway's tests (fakes_test.go, http_test.go): the stack
// tests moved here with the composition root (issue #15 item 6) and build the same requests.

// fixedPolicy is a hand-written size-or-wait policy: dispatch max when that many wait, else
// everything once the oldest has waited `wait`.
type fixedPolicy struct {
	max      int
	wait     time.Duration
	observed []batching.Outcome
}

func (p *fixedPolicy) Decide(q batching.Queue, now time.Time) batching.Decision {
	switch {
	case q.Len == 0:
		return batching.Decision{Reason: "empty"}
	case q.Len >= p.max:
		return batching.Decision{Dispatch: p.max, Reason: "full"}
	case !now.Before(q.Oldest.Add(p.wait)):
		return batching.Decision{Dispatch: q.Len, Reason: "timeout"}
	}
	return batching.Decision{Next: q.Oldest.Add(p.wait), Reason: "wait"}
}

func (p *fixedPolicy) Observe(o batching.Outcome, now time.Time) {
	o.Arrivals = nil
	p.observed = append(p.observed, o)
}

func (p *fixedPolicy) MaxBatch() int { return p.max }

// request returns a request for model "m" with rows rows of x holding 0, 1, 2, ...
func request(id string, rows int) *oip.InferenceRequest {
	data := make([]float32, 2*rows)
	for i := range data {
		data[i] = float32(i)
	}
	return &oip.InferenceRequest{ID: id, Inputs: []oip.Tensor{oip.NewFP32("x", []int64{int64(rows), 2}, data)}}
}

// body returns the JSON body of request(id, rows), with extra inserted before "inputs".
func body(id string, rows int, extra string) []byte {
	vals := make([]string, 0, 2*rows)
	for i := 0; i < 2*rows; i++ {
		vals = append(vals, strconv.Itoa(i))
	}
	return []byte(fmt.Sprintf(`{"id":%q,%s"inputs":[{"name":"x","datatype":"FP32","shape":[%d,2],"data":[%s]}]}`,
		id, extra, rows, strings.Join(vals, ",")))
}

// diff returns "" when want and got are deeply equal, else both in (-want +got) form.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("- %+v\n+ %+v", want, got)
}

// sumRequest is what the test workers read of an inference request: its id and its one input.
type sumRequest struct {
	ID    string
	Input struct {
		Shape []int64
		Data  []float64
	}
}

// readSumRequest reads a request with one FP32 input sent as JSON or in Triton's binary tensor
// extension (JSON header of Inference-Header-Content-Length bytes, then little-endian float32s),
// written with encoding/json and encoding/binary, independently of package oip.
func readSumRequest(r *http.Request) (*sumRequest, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	head := body
	hl := r.Header.Get("Inference-Header-Content-Length")
	if hl != "" {
		n, err := strconv.Atoi(hl)
		if err != nil || n > len(body) {
			return nil, fmt.Errorf("bad header length %q", hl)
		}
		head = body[:n]
	}
	var req struct {
		ID     string `json:"id"`
		Inputs []struct {
			Shape      []int64        `json:"shape"`
			Data       []float64      `json:"data"`
			Parameters map[string]any `json:"parameters"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(head, &req); err != nil || len(req.Inputs) != 1 || len(req.Inputs[0].Shape) != 2 {
		return nil, fmt.Errorf("bad request: %v", err)
	}
	out := &sumRequest{ID: req.ID}
	in := req.Inputs[0]
	out.Input.Shape, out.Input.Data = in.Shape, in.Data
	if hl != "" {
		blob := body[len(head):]
		out.Input.Data = make([]float64, len(blob)/4)
		for i := range out.Input.Data {
			out.Input.Data[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:])))
		}
	}
	if int64(len(out.Input.Data)) != in.Shape[0]*in.Shape[1] {
		return nil, fmt.Errorf("%d values for shape %v", len(out.Input.Data), in.Shape)
	}
	return out, nil
}

// argmax is the index of row's largest value (the first of equals).
func argmax(row []float32) int {
	best := 0
	for j, v := range row {
		if v > row[best] {
			best = j
		}
	}
	return best
}
