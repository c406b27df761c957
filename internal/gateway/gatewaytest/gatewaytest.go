// Package gatewaytest holds the test helpers the gateway's tests and the serving stack's tests
// (internal/app) share: a hand-written batching policy, requests of the test model "m" and a
// tiny OIP v2 worker that answers their row sums. Only tests import it.
package gatewaytest

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

// FixedPolicy is a hand-written size-or-wait policy: dispatch Max when that many wait, else
// everything once the oldest has waited Wait. It keeps the outcomes it observed.
type FixedPolicy struct {
	Max      int
	Wait     time.Duration
	Observed []batching.Outcome
}

// Decide implements batching.Policy.
func (p *FixedPolicy) Decide(q batching.Queue, now time.Time) batching.Decision {
	switch {
	case q.Len == 0:
		return batching.Decision{Reason: "empty"}
	case q.Len >= p.Max:
		return batching.Decision{Dispatch: p.Max, Reason: "full"}
	case !now.Before(q.Oldest.Add(p.Wait)):
		return batching.Decision{Dispatch: q.Len, Reason: "timeout"}
	}
	return batching.Decision{Next: q.Oldest.Add(p.Wait), Reason: "wait"}
}

// Observe implements batching.Policy: it records o without its arrivals.
func (p *FixedPolicy) Observe(o batching.Outcome, now time.Time) {
	o.Arrivals = nil
	p.Observed = append(p.Observed, o)
}

// MaxBatch implements batching.Policy.
func (p *FixedPolicy) MaxBatch() int { return p.Max }

// Request returns a request for model "m" with rows rows of x holding 0, 1, 2, ...
func Request(id string, rows int) *oip.InferenceRequest {
	data := make([]float32, 2*rows)
	for i := range data {
		data[i] = float32(i)
	}
	return &oip.InferenceRequest{ID: id, Inputs: []oip.Tensor{oip.NewFP32("x", []int64{int64(rows), 2}, data)}}
}

// Body returns the JSON body of Request(id, rows), with extra inserted before "inputs".
func Body(id string, rows int, extra string) []byte {
	vals := make([]string, 0, 2*rows)
	for i := 0; i < 2*rows; i++ {
		vals = append(vals, strconv.Itoa(i))
	}
	return []byte(fmt.Sprintf(`{"id":%q,%s"inputs":[{"name":"x","datatype":"FP32","shape":[%d,2],"data":[%s]}]}`,
		id, extra, rows, strings.Join(vals, ",")))
}

// Diff returns "" when want and got are deeply equal, else both in (-want +got) form.
func Diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("- %+v\n+ %+v", want, got)
}

// SumRequest is what the test workers read of an inference request: its id and its one input.
type SumRequest struct {
	ID    string
	Input struct {
		Shape []int64
		Data  []float64
	}
}

// ReadSumRequest reads a request with one FP32 input sent as JSON or in Triton's binary tensor
// extension (JSON header of Inference-Header-Content-Length bytes, then little-endian float32s),
// written with encoding/json and encoding/binary, independently of package oip.
func ReadSumRequest(r *http.Request) (*SumRequest, error) {
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
	out := &SumRequest{ID: req.ID}
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

// SumWorker serves model "m" over OIP v2 REST, written with encoding/json independently of
// package oip: input x [N,2] FP32, output y [N,1] = row sums, each answer reporting serviceUS
// (microseconds) as its service time. With health it also answers GET /v2/health/ready.
func SumWorker(serviceUS string, health bool) http.Handler {
	mux := http.NewServeMux()
	if health {
		mux.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, r *http.Request) {})
	}
	mux.HandleFunc("GET /v2/models/m", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"m","platform":"test","inputs":[{"name":"x","datatype":"FP32","shape":[-1,2]}],"outputs":[{"name":"y","datatype":"FP32","shape":[-1,1]}]}`)
	})
	mux.HandleFunc("POST /v2/models/m/infer", func(w http.ResponseWriter, r *http.Request) {
		req, err := ReadSumRequest(r)
		if err != nil {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"bad input"}`)
			return
		}
		n := int(req.Input.Shape[0])
		out := make([]float64, n)
		for i := range n {
			out[i] = req.Input.Data[2*i] + req.Input.Data[2*i+1]
		}
		data, _ := json.Marshal(out)
		w.Header().Set(oip.HeaderServiceTime, serviceUS)
		fmt.Fprintf(w, `{"model_name":"m","id":%q,"outputs":[{"name":"y","datatype":"FP32","shape":[%d,1],"data":%s}]}`, req.ID, n, data)
	})
	return mux
}
