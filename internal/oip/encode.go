package oip

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendRequest appends r's JSON encoding to dst. Data is written flat; FP32 elements in their
// shortest round-tripping form. It fails on a tensor whose element count does not match its shape,
// on NaN or infinite values (JSON cannot carry them) and on unsupported parameter values.
func AppendRequest(dst []byte, r *InferenceRequest) ([]byte, error) {
	out, _, err := appendRequest(dst, r, false)
	return out, err
}

// appendRequest encodes r; with binary, tensor data goes into a binary section after the JSON,
// whose length it returns (the Inference-Header-Content-Length).
func appendRequest(dst []byte, r *InferenceRequest, binary bool) (out []byte, headerLen int, err error) {
	start := len(dst)
	if dst, err = appendRequestJSON(dst, r, binary); err != nil {
		return dst, 0, err
	}
	headerLen = len(dst) - start
	if binary {
		for i := range r.Inputs {
			dst = appendBlob(dst, &r.Inputs[i])
		}
	}
	return dst, headerLen, nil
}

// appendRequestJSON appends r's JSON; with binary, its tensors announce binary_data_size and
// carry no data.
func appendRequestJSON(dst []byte, r *InferenceRequest, binary bool) (_ []byte, err error) {
	dst = append(dst, '{')
	sep := false
	if r.ID != "" {
		dst = appendKey(dst, "id", sep)
		dst = appendString(dst, r.ID)
		sep = true
	}
	if r.Parameters != nil {
		dst = appendKey(dst, "parameters", sep)
		if dst, err = appendParameters(dst, r.Parameters); err != nil {
			return dst, fmt.Errorf("request parameters: %w", err)
		}
		sep = true
	}
	dst = appendKey(dst, "inputs", sep)
	dst = append(dst, '[')
	for i := range r.Inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendTensor(dst, &r.Inputs[i], binary); err != nil {
			return dst, fmt.Errorf("inputs[%d]: %w", i, err)
		}
	}
	dst = append(dst, ']')
	if len(r.Outputs) > 0 {
		dst = append(dst, `,"outputs":[`...)
		for i, o := range r.Outputs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"name":`...)
			dst = appendString(dst, o.Name)
			if o.Parameters != nil {
				dst = append(dst, `,"parameters":`...)
				if dst, err = appendParameters(dst, o.Parameters); err != nil {
					return dst, fmt.Errorf("outputs[%d] parameters: %w", i, err)
				}
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// requestBinaryParts returns r in the binary extension's layout as parts to be written in turn:
// the JSON part, then each input's binary section. Fixed-size numeric inputs share the tensors'
// memory on a little-endian host, so a client streams a large tensor to the socket without
// assembling (allocating, zeroing and copying) a body of its size first.
func requestBinaryParts(r *InferenceRequest, jsonSize int) (parts [][]byte, size int64, err error) {
	header, err := appendRequestJSON(make([]byte, 0, jsonSize), r, true)
	if err != nil {
		return nil, 0, err
	}
	parts = append(make([][]byte, 0, 1+len(r.Inputs)), header)
	size = int64(len(header))
	for i := range r.Inputs {
		b, ok := fixedBytes(&r.Inputs[i])
		if !ok || !hostLittleEndian {
			b = appendBlob(nil, &r.Inputs[i])
		}
		parts = append(parts, b)
		size += int64(len(b))
	}
	return parts, size, nil
}

// AppendResponse appends r's JSON encoding to dst, with the same rules as AppendRequest.
func AppendResponse(dst []byte, r *InferenceResponse) ([]byte, error) {
	out, _, err := appendResponse(dst, r, nil)
	return out, err
}

// appendResponse encodes r; outputs i with binary(i) go into a binary section after the JSON,
// whose length it returns (the Inference-Header-Content-Length).
func appendResponse(dst []byte, r *InferenceResponse, binary func(i int) bool) (out []byte, headerLen int, err error) {
	start := len(dst)
	isBinary := func(i int) bool { return binary != nil && binary(i) }
	dst = append(dst, `{"model_name":`...)
	dst = appendString(dst, r.ModelName)
	if r.ModelVersion != "" {
		dst = append(dst, `,"model_version":`...)
		dst = appendString(dst, r.ModelVersion)
	}
	if r.ID != "" {
		dst = append(dst, `,"id":`...)
		dst = appendString(dst, r.ID)
	}
	if r.Parameters != nil {
		dst = append(dst, `,"parameters":`...)
		if dst, err = appendParameters(dst, r.Parameters); err != nil {
			return dst, 0, fmt.Errorf("response parameters: %w", err)
		}
	}
	dst = append(dst, `,"outputs":[`...)
	for i := range r.Outputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendTensor(dst, &r.Outputs[i], isBinary(i)); err != nil {
			return dst, 0, fmt.Errorf("outputs[%d]: %w", i, err)
		}
	}
	dst = append(dst, "]}"...)
	headerLen = len(dst) - start
	for i := range r.Outputs {
		if isBinary(i) {
			dst = appendBlob(dst, &r.Outputs[i])
		}
	}
	return dst, headerLen, nil
}

// MarshalJSON implements json.Marshaler with AppendRequest.
func (r *InferenceRequest) MarshalJSON() ([]byte, error) { return AppendRequest(nil, r) }

// MarshalJSON implements json.Marshaler with AppendResponse.
func (r *InferenceResponse) MarshalJSON() ([]byte, error) { return AppendResponse(nil, r) }

func appendKey(dst []byte, k string, sep bool) []byte {
	if sep {
		dst = append(dst, ',')
	}
	dst = appendString(dst, k)
	return append(dst, ':')
}

// appendTensor encodes t; with binary, its parameters get binary_data_size and its data is left
// for appendBlob.
func appendTensor(dst []byte, t *Tensor, binary bool) ([]byte, error) {
	if !t.Datatype.Valid() {
		return dst, fmt.Errorf("tensor %q: unsupported datatype %q", t.Name, t.Datatype)
	}
	want, err := ShapeElements(t.Shape)
	if err != nil {
		return dst, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if got := int64(t.Len()); got != want {
		return dst, fmt.Errorf("tensor %q: %d elements, shape %v needs %d", t.Name, got, t.Shape, want)
	}
	dst = append(dst, `{"name":`...)
	dst = appendString(dst, t.Name)
	dst = append(dst, `,"datatype":"`...)
	dst = append(dst, t.Datatype...)
	dst = append(dst, `","shape":[`...)
	for i, s := range t.Shape {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, s, 10)
	}
	dst = append(dst, ']')
	params := t.Parameters
	if binary {
		params = make(Parameters, len(t.Parameters)+1)
		for k, v := range t.Parameters {
			params[k] = v
		}
		params[ParamBinaryDataSize] = int64(blobSize(t))
	}
	if params != nil {
		dst = append(dst, `,"parameters":`...)
		if dst, err = appendParameters(dst, params); err != nil {
			return dst, fmt.Errorf("tensor %q parameters: %w", t.Name, err)
		}
	}
	if binary {
		return append(dst, '}'), nil
	}
	dst = append(dst, `,"data":[`...)
	switch t.Datatype {
	case DatatypeFP32:
		for i, v := range t.FP32 {
			if i > 0 {
				dst = append(dst, ',')
			}
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return dst, fmt.Errorf("tensor %q: element %d is %v, which JSON cannot carry", t.Name, i, v)
			}
			dst = strconv.AppendFloat(dst, f, 'g', -1, 32)
		}
	case DatatypeFP64:
		for i, v := range t.FP64 {
			if i > 0 {
				dst = append(dst, ',')
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return dst, fmt.Errorf("tensor %q: element %d is %v, which JSON cannot carry", t.Name, i, v)
			}
			dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
		}
	case DatatypeINT32:
		for i, v := range t.INT32 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(v), 10)
		}
	case DatatypeINT64:
		for i, v := range t.INT64 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, v, 10)
		}
	case DatatypeBOOL:
		for i, v := range t.BOOL {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendBool(dst, v)
		}
	case DatatypeBYTES:
		for i, v := range t.BYTES {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, v)
		}
	}
	return append(dst, "]}"...), nil
}

// appendParameters writes p with sorted keys, so that encodings are deterministic.
func appendParameters(dst []byte, p Parameters) ([]byte, error) {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		dst = appendKey(dst, k, i > 0)
		switch v := p[k].(type) {
		case string:
			dst = appendString(dst, v)
		case bool:
			dst = strconv.AppendBool(dst, v)
		case json.Number:
			d := decoder{b: []byte(v)}
			if n, _, err := d.number(); err != nil || len(n) != len(v) {
				return dst, fmt.Errorf("parameter %q: %q is not a JSON number", k, string(v))
			}
			dst = append(dst, v...)
		case int:
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int32:
			dst = strconv.AppendInt(dst, int64(v), 10)
		case int64:
			dst = strconv.AppendInt(dst, v, 10)
		case uint32:
			dst = strconv.AppendUint(dst, uint64(v), 10)
		case uint64:
			dst = strconv.AppendUint(dst, v, 10)
		case float32:
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return dst, fmt.Errorf("parameter %q: %v cannot be encoded in JSON", k, v)
			}
			dst = strconv.AppendFloat(dst, float64(v), 'g', -1, 32)
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return dst, fmt.Errorf("parameter %q: %v cannot be encoded in JSON", k, v)
			}
			dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
		default:
			return dst, fmt.Errorf("parameter %q: unsupported type %T (want string, bool or a number)", k, v)
		}
	}
	return append(dst, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD, as in encoding/json.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
