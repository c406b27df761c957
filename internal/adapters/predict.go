package adapters

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/sloserve/sloserve/internal/oip"
)

// Options configures the adapters. The zero value is usable.
type Options struct {
	// Limits bounds request bodies and tensors; zero fields take oip.DefaultLimits' values (an
	// invalid setting falls back to the defaults).
	Limits oip.Limits
	// RetryAfter is the Retry-After sent with 429 and 503 answers whose error carries no hint;
	// zero means oip.DefaultRetryAfter.
	RetryAfter time.Duration
	// Now is the clock for oip.Call.Arrival; nil means time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Limits = o.Limits.WithDefaults(); o.Limits.Validate() != nil {
		o.Limits = oip.DefaultLimits()
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = oip.DefaultRetryAfter
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// predictor turns V1 predict bodies into oip calls on a Core and the answers back; both adapters
// share it.
type predictor struct {
	core oip.Core
	opts Options
}

// readBody reads r's body within the limit; ErrTooLarge when it is longer.
func (p *predictor) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	lim := p.opts.Limits.MaxBodyBytes
	if r.ContentLength > lim {
		return nil, fmt.Errorf("%w: body is %d bytes, limit %d", oip.ErrTooLarge, r.ContentLength, lim)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, lim))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, fmt.Errorf("%w: body exceeds the limit of %d bytes", oip.ErrTooLarge, lim)
		}
		if errors.Is(err, oip.ErrUnavailable) || errors.Is(err, oip.ErrOverloaded) {
			return nil, fmt.Errorf("reading body: %w", err) // the server's own refusal (a byte budget)
		}
		return nil, fmt.Errorf("%w: reading body: %v", oip.ErrBadRequest, err)
	}
	return b, nil
}

// decodeJSON decodes body into a generic value with exact numbers, rejecting trailing data.
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: body is not valid JSON: %v", oip.ErrBadRequest, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON body", oip.ErrBadRequest)
	}
	return v, nil
}

// predict runs one V1 predict body (already parsed into a generic JSON value) on model and
// returns the answer body: {"predictions": ...} for row format, {"outputs": ...} for columnar.
func (p *predictor) predict(ctx context.Context, model, version string, body any, arrival time.Time) (map[string]any, error) {
	md, err := p.core.ModelMetadata(ctx, model, version)
	if err != nil {
		return nil, err
	}
	if md == nil {
		return nil, fmt.Errorf("%w: model %q has no metadata", oip.ErrInternal, model)
	}
	var instances, columns any
	switch b := body.(type) {
	case []any:
		instances = b // a bare array is the instances (SageMaker's common form)
	case map[string]any:
		inst, hasInst := b["instances"]
		cols, hasCols := b["inputs"]
		for k := range b {
			if k != "instances" && k != "inputs" && k != "signature_name" {
				return nil, fmt.Errorf(`%w: unknown field %q (want "instances" or "inputs")`, oip.ErrBadRequest, k)
			}
		}
		switch {
		case hasInst && hasCols:
			return nil, fmt.Errorf(`%w: give either "instances" or "inputs", not both`, oip.ErrBadRequest)
		case hasInst:
			instances = inst
		case hasCols:
			columns = cols
		default:
			return nil, fmt.Errorf(`%w: missing "instances" (or "inputs")`, oip.ErrBadRequest)
		}
	default:
		return nil, fmt.Errorf(`%w: body must be an object with "instances" or "inputs", or an array of instances`, oip.ErrBadRequest)
	}
	var req *oip.InferenceRequest
	if columns != nil {
		req, err = p.columnar(md, columns)
	} else {
		req, err = p.rows(md, instances)
	}
	if err != nil {
		return nil, err
	}
	if err := oip.ValidateRequest(req, md); err != nil {
		return nil, err
	}
	resp, err := p.core.Infer(ctx, &oip.Call{Model: model, Version: version, Request: req, Metadata: md, Arrival: arrival})
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("%w: model %q returned no response", oip.ErrInternal, model)
	}
	if columns != nil {
		return columnarAnswer(resp)
	}
	return rowAnswer(resp, req.Inputs[0].Rows())
}

// rows converts row-format instances: for a one-input model each instance is that input's row
// (or an object naming it); for several inputs each instance is an object with one key per input.
func (p *predictor) rows(md *oip.ModelMetadata, v any) (*oip.InferenceRequest, error) {
	inst, ok := v.([]any)
	if !ok || len(inst) == 0 {
		return nil, fmt.Errorf(`%w: "instances" must be a non-empty array`, oip.ErrBadRequest)
	}
	if len(md.Inputs) == 0 {
		return nil, fmt.Errorf("%w: model %q declares no inputs", oip.ErrInternal, md.Name)
	}
	_, named := inst[0].(map[string]any)
	if len(md.Inputs) == 1 && named {
		if obj := inst[0].(map[string]any); len(obj) == 1 && obj["b64"] != nil {
			named = false // a {"b64": ...} BYTES element, not a named instance
		}
	}
	if !named {
		if len(md.Inputs) != 1 {
			return nil, fmt.Errorf("%w: model %q has %d inputs; each instance must be an object naming them (%s)", oip.ErrBadRequest, md.Name, len(md.Inputs), inputNames(md))
		}
		in := md.Inputs[0]
		t, err := toTensor(in.Name, in.Datatype, v, p.opts.Limits)
		if err != nil {
			return nil, err
		}
		return &oip.InferenceRequest{Inputs: []oip.Tensor{t}}, nil
	}
	req := &oip.InferenceRequest{Inputs: make([]oip.Tensor, 0, len(md.Inputs))}
	var total int64
	for _, in := range md.Inputs {
		col := make([]any, len(inst))
		for i, x := range inst {
			obj, ok := x.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: instances[%d] is %s; instances must all be objects or all be values", oip.ErrBadRequest, i, describe(x))
			}
			if len(obj) != len(md.Inputs) {
				return nil, fmt.Errorf("%w: instances[%d] has %d keys; model %q takes %s", oip.ErrBadRequest, i, len(obj), md.Name, inputNames(md))
			}
			if col[i], ok = obj[in.Name]; !ok {
				return nil, fmt.Errorf("%w: instances[%d] lacks input %q", oip.ErrBadRequest, i, in.Name)
			}
		}
		t, err := toTensor(in.Name, in.Datatype, col, p.opts.Limits)
		if err != nil {
			return nil, err
		}
		if total += int64(t.Len()); total > p.opts.Limits.MaxTotalElements {
			return nil, fmt.Errorf("%w: more than %d elements in all", oip.ErrTooLarge, p.opts.Limits.MaxTotalElements)
		}
		req.Inputs = append(req.Inputs, t)
	}
	return req, nil
}

// columnar converts TF Serving's columnar "inputs": the whole batched tensor for a one-input
// model, or an object with one batched tensor per input name.
func (p *predictor) columnar(md *oip.ModelMetadata, v any) (*oip.InferenceRequest, error) {
	obj, named := v.(map[string]any)
	if !named {
		if len(md.Inputs) != 1 {
			return nil, fmt.Errorf(`%w: model %q has %d inputs; "inputs" must be an object naming them (%s)`, oip.ErrBadRequest, md.Name, len(md.Inputs), inputNames(md))
		}
		obj = map[string]any{md.Inputs[0].Name: v}
	}
	req := &oip.InferenceRequest{}
	var total int64
	for _, in := range md.Inputs {
		x, ok := obj[in.Name]
		if !ok {
			return nil, fmt.Errorf("%w: inputs lacks %q", oip.ErrBadRequest, in.Name)
		}
		t, err := toTensor(in.Name, in.Datatype, x, p.opts.Limits)
		if err != nil {
			return nil, err
		}
		if total += int64(t.Len()); total > p.opts.Limits.MaxTotalElements {
			return nil, fmt.Errorf("%w: more than %d elements in all", oip.ErrTooLarge, p.opts.Limits.MaxTotalElements)
		}
		req.Inputs = append(req.Inputs, t)
	}
	if len(obj) != len(md.Inputs) {
		return nil, fmt.Errorf("%w: inputs has %d entries; model %q takes %s", oip.ErrBadRequest, len(obj), md.Name, inputNames(md))
	}
	return req, nil
}

// rowAnswer builds {"predictions": [...]}: one element per instance, the output's row for a
// one-output model, else an object of every output's row (TF Serving's row format).
func rowAnswer(resp *oip.InferenceResponse, rows int64) (map[string]any, error) {
	cols := make([][]any, len(resp.Outputs))
	for i := range resp.Outputs {
		t := &resp.Outputs[i]
		if len(t.Shape) == 0 || t.Shape[0] != rows {
			return nil, fmt.Errorf("%w: output %q has shape %v, not one row per instance (%d)", oip.ErrInternal, t.Name, t.Shape, rows)
		}
		v, err := fromTensor(t)
		if err != nil {
			return nil, err
		}
		cols[i] = v.([]any)
	}
	if len(cols) == 1 {
		return map[string]any{"predictions": cols[0]}, nil
	}
	preds := make([]any, rows)
	for r := range preds {
		obj := make(map[string]any, len(cols))
		for i, c := range cols {
			obj[resp.Outputs[i].Name] = c[r]
		}
		preds[r] = obj
	}
	return map[string]any{"predictions": preds}, nil
}

// columnarAnswer builds {"outputs": ...}: the tensor for a one-output model, else an object of
// tensors by name.
func columnarAnswer(resp *oip.InferenceResponse) (map[string]any, error) {
	outs := make(map[string]any, len(resp.Outputs))
	var one any
	for i := range resp.Outputs {
		v, err := fromTensor(&resp.Outputs[i])
		if err != nil {
			return nil, err
		}
		outs[resp.Outputs[i].Name], one = v, v
	}
	if len(outs) == 1 {
		return map[string]any{"outputs": one}, nil
	}
	return map[string]any{"outputs": outs}, nil
}

func inputNames(md *oip.ModelMetadata) string {
	names := make([]string, len(md.Inputs))
	for i, in := range md.Inputs {
		names[i] = strconv.Quote(in.Name)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// writeError sends err as {"error": "..."} with oip.StatusOf's code and, for 429 and 503,
// Retry-After, as the OIP v2 handler does.
func (p *predictor) writeError(w http.ResponseWriter, err error) {
	code := oip.StatusOf(err)
	if code == 499 {
		code = http.StatusBadRequest
	}
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		after, ok := oip.RetryAfter(err)
		if !ok {
			after = p.opts.RetryAfter
		}
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(math.Ceil(after.Seconds()))), 10))
	}
	writeJSON(w, code, oip.ErrorResponse{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
