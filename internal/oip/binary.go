package oip

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unsafe"
)

// Triton's binary tensor data extension: the body is the JSON message followed by the raw
// tensors, little-endian, in the order of the tensors that carry a binary_data_size parameter;
// the Inference-Header-Content-Length header gives the length of the JSON part. BYTES elements are
// each a 4-byte little-endian length followed by the bytes; BOOL elements one byte, 0 or 1.
// It spares the decimal text of a batch: the gateway's merged [N, 784] FP32 batches travel as
// 3136·N bytes that are copied, not parsed.
const (
	// HeaderInferenceHeaderLength is the length in bytes of the JSON part of a binary body.
	HeaderInferenceHeaderLength = "Inference-Header-Content-Length"
	// ParamBinaryDataSize is the tensor parameter giving its size in the binary section (bytes).
	ParamBinaryDataSize = "binary_data_size"
	// ParamBinaryData is the requested-output parameter asking for that output in binary (bool).
	ParamBinaryData = "binary_data"
	// ParamBinaryDataOutput is the request parameter asking for every output in binary (bool).
	ParamBinaryDataOutput = "binary_data_output"
)

// elemSize is the size of one element of d in the binary section; 0 for BYTES (variable).
func elemSize(d Datatype) int {
	switch d {
	case DatatypeFP32, DatatypeINT32:
		return 4
	case DatatypeFP64, DatatypeINT64:
		return 8
	case DatatypeBOOL:
		return 1
	}
	return 0
}

// blobSize is the size of t's data in the binary section, in bytes.
func blobSize(t *Tensor) int {
	if t.Datatype == DatatypeBYTES {
		n := 0
		for _, s := range t.BYTES {
			n += 4 + len(s)
		}
		return n
	}
	return elemSize(t.Datatype) * t.Len()
}

// hostLittleEndian reports whether this machine stores numbers little-endian, as the binary
// section does: fixed-size elements are then copied as memory, not converted one by one (a
// 224×224×3 FP32 image is 600 KB; the per-element loop cost more than the copy and the socket).
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// fixedBytes returns the memory of t's FP32, FP64, INT32 or INT64 data as bytes (sharing it), and
// false for BOOL, BYTES or an unknown datatype.
func fixedBytes(t *Tensor) ([]byte, bool) {
	var p unsafe.Pointer
	var n int
	switch t.Datatype {
	case DatatypeFP32:
		p, n = unsafe.Pointer(unsafe.SliceData(t.FP32)), 4*len(t.FP32)
	case DatatypeFP64:
		p, n = unsafe.Pointer(unsafe.SliceData(t.FP64)), 8*len(t.FP64)
	case DatatypeINT32:
		p, n = unsafe.Pointer(unsafe.SliceData(t.INT32)), 4*len(t.INT32)
	case DatatypeINT64:
		p, n = unsafe.Pointer(unsafe.SliceData(t.INT64)), 8*len(t.INT64)
	default:
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	return unsafe.Slice((*byte)(p), n), true
}

// makeFixed allocates t's data slice for n elements of its fixed-size datatype and returns its
// memory as bytes; false for BOOL, BYTES or an unknown datatype.
func makeFixed(t *Tensor, n int64) ([]byte, bool) {
	switch t.Datatype {
	case DatatypeFP32:
		t.FP32 = make([]float32, n)
	case DatatypeFP64:
		t.FP64 = make([]float64, n)
	case DatatypeINT32:
		t.INT32 = make([]int32, n)
	case DatatypeINT64:
		t.INT64 = make([]int64, n)
	default:
		return nil, false
	}
	return fixedBytes(t)
}

// appendBlob appends t's data in the binary section's layout.
func appendBlob(dst []byte, t *Tensor) []byte {
	if hostLittleEndian {
		if b, ok := fixedBytes(t); ok {
			return append(dst, b...)
		}
	}
	le := binary.LittleEndian
	switch t.Datatype {
	case DatatypeFP32:
		for _, v := range t.FP32 {
			dst = le.AppendUint32(dst, math.Float32bits(v))
		}
	case DatatypeFP64:
		for _, v := range t.FP64 {
			dst = le.AppendUint64(dst, math.Float64bits(v))
		}
	case DatatypeINT32:
		for _, v := range t.INT32 {
			dst = le.AppendUint32(dst, uint32(v))
		}
	case DatatypeINT64:
		for _, v := range t.INT64 {
			dst = le.AppendUint64(dst, uint64(v))
		}
	case DatatypeBOOL:
		for _, v := range t.BOOL {
			b := byte(0)
			if v {
				b = 1
			}
			dst = append(dst, b)
		}
	case DatatypeBYTES:
		for _, s := range t.BYTES {
			dst = le.AppendUint32(dst, uint32(len(s)))
			dst = append(dst, s...)
		}
	}
	return dst
}

// AppendRequestBinary appends r in the binary extension's layout: every input's data goes into
// the binary section. It returns the body and the length of its JSON part, to be sent as
// HeaderInferenceHeaderLength.
func AppendRequestBinary(dst []byte, r *InferenceRequest) (body []byte, headerLen int, err error) {
	return appendRequest(dst, r, true)
}

// AppendResponseBinary appends r with every output's data in the binary section; see
// AppendRequestBinary.
func AppendResponseBinary(dst []byte, r *InferenceResponse) (body []byte, headerLen int, err error) {
	return appendResponse(dst, r, func(int) bool { return true })
}

// DecodeRequestBinary decodes a request body in the binary extension's layout; headerLen is the
// HeaderInferenceHeaderLength value. Inputs may carry data in the JSON or binary_data_size and
// their data in the binary section, which must be consumed exactly. The decoded tensors hold
// their data in the typed slices and no longer carry binary_data_size.
func DecodeRequestBinary(body []byte, headerLen int, lim Limits) (*InferenceRequest, error) {
	lim = lim.WithDefaults()
	if int64(len(body)) > lim.MaxBodyBytes {
		return nil, fmt.Errorf("%w: body is %d bytes, limit %d", ErrTooLarge, len(body), lim.MaxBodyBytes)
	}
	if headerLen < 0 || headerLen > len(body) {
		return nil, fmt.Errorf("%w: %s %d is outside the %d-byte body", ErrBadRequest, HeaderInferenceHeaderLength, headerLen, len(body))
	}
	d := decoder{b: body[:headerLen], lim: lim, strict: true, binary: true}
	r := new(InferenceRequest)
	if err := d.request(r); err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	if err := fillBinary(r.Inputs, body[headerLen:], &d, "inputs"); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeResponseBinary decodes a response body in the binary extension's layout, skipping unknown
// fields like DecodeResponse.
func DecodeResponseBinary(body []byte, headerLen int, lim Limits) (*InferenceResponse, error) {
	lim = lim.WithDefaults()
	if int64(len(body)) > lim.MaxBodyBytes {
		return nil, fmt.Errorf("%w: body is %d bytes, limit %d", ErrTooLarge, len(body), lim.MaxBodyBytes)
	}
	if headerLen < 0 || headerLen > len(body) {
		return nil, fmt.Errorf("%w: %s %d is outside the %d-byte body", ErrBadRequest, HeaderInferenceHeaderLength, headerLen, len(body))
	}
	d := decoder{b: body[:headerLen], lim: lim, binary: true}
	r := new(InferenceResponse)
	if err := d.response(r); err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	if err := fillBinary(r.Outputs, body[headerLen:], &d, "outputs"); err != nil {
		return nil, err
	}
	return r, nil
}

// fillBinary moves the binary section into the tensors that announced binary_data_size, in order.
func fillBinary(ts []Tensor, blob []byte, d *decoder, field string) error {
	le := binary.LittleEndian
	for i := range ts {
		t := &ts[i]
		v, ok := t.Parameters[ParamBinaryDataSize]
		if !ok {
			continue
		}
		where := field + "[" + strconv.Itoa(i) + "] (" + strconv.Quote(t.Name) + ")"
		num, isNum := v.(json.Number)
		size, err := strconv.ParseInt(string(num), 10, 64)
		if !isNum || err != nil || size < 0 {
			return fmt.Errorf("%w: %s: %s must be an integer >= 0, got %v", ErrBadRequest, where, ParamBinaryDataSize, v)
		}
		if size > int64(len(blob)) {
			return fmt.Errorf("%w: %s: %s %d, but only %d binary bytes remain", ErrBadRequest, where, ParamBinaryDataSize, size, len(blob))
		}
		n, err := ShapeElements(t.Shape)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadRequest, where, err)
		}
		if n > d.lim.MaxTensorElements {
			return fmt.Errorf("%w: %s: more than %d elements", ErrTooLarge, where, d.lim.MaxTensorElements)
		}
		if d.total += n; d.total > d.lim.MaxTotalElements {
			return fmt.Errorf("%w: more than %d elements in all tensors", ErrTooLarge, d.lim.MaxTotalElements)
		}
		b := blob[:size]
		blob = blob[size:]
		if es := int64(elemSize(t.Datatype)); es > 0 && size != n*es {
			return fmt.Errorf("%w: %s: %s %d, shape %v of %s needs %d", ErrBadRequest, where, ParamBinaryDataSize, size, t.Shape, t.Datatype, n*es)
		}
		copied := false
		if hostLittleEndian {
			var mem []byte
			if mem, copied = makeFixed(t, n); copied {
				copy(mem, b)
			}
		}
		switch {
		case copied:
		case t.Datatype == DatatypeFP32:
			t.FP32 = make([]float32, n)
			for k := range t.FP32 {
				t.FP32[k] = math.Float32frombits(le.Uint32(b[4*k:]))
			}
		case t.Datatype == DatatypeFP64:
			t.FP64 = make([]float64, n)
			for k := range t.FP64 {
				t.FP64[k] = math.Float64frombits(le.Uint64(b[8*k:]))
			}
		case t.Datatype == DatatypeINT32:
			t.INT32 = make([]int32, n)
			for k := range t.INT32 {
				t.INT32[k] = int32(le.Uint32(b[4*k:]))
			}
		case t.Datatype == DatatypeINT64:
			t.INT64 = make([]int64, n)
			for k := range t.INT64 {
				t.INT64[k] = int64(le.Uint64(b[8*k:]))
			}
		case t.Datatype == DatatypeBOOL:
			t.BOOL = make([]bool, n)
			for k, c := range b {
				if c > 1 {
					return fmt.Errorf("%w: %s: BOOL byte %d is %d, want 0 or 1", ErrBadRequest, where, k, c)
				}
				t.BOOL[k] = c == 1
			}
		case t.Datatype == DatatypeBYTES:
			t.BYTES = make([]string, 0, min(n, int64(len(b)/4)))
			for len(b) > 0 {
				if len(b) < 4 || int64(le.Uint32(b)) > int64(len(b)-4) {
					return fmt.Errorf("%w: %s: truncated BYTES element %d", ErrBadRequest, where, len(t.BYTES))
				}
				l := int(le.Uint32(b))
				t.BYTES = append(t.BYTES, string(b[4:4+l]))
				b = b[4+l:]
			}
			if int64(len(t.BYTES)) != n {
				return fmt.Errorf("%w: %s: %d BYTES elements, shape %v needs %d", ErrBadRequest, where, len(t.BYTES), t.Shape, n)
			}
		}
		delete(t.Parameters, ParamBinaryDataSize)
		if len(t.Parameters) == 0 {
			t.Parameters = nil
		}
	}
	if len(blob) != 0 {
		return fmt.Errorf("%w: %d binary bytes follow the last binary tensor", ErrBadRequest, len(blob))
	}
	return nil
}

// binaryOutputs reports, per output of resp, whether req asked for it in binary: the output's own
// binary_data parameter when given, else the request's binary_data_output. It returns nil when no
// output is binary.
func binaryOutputs(req *InferenceRequest, resp *InferenceResponse) func(int) bool {
	all := paramBool(req.Parameters[ParamBinaryDataOutput])
	any := all
	for _, o := range req.Outputs {
		any = any || paramBool(o.Parameters[ParamBinaryData])
	}
	if !any {
		return nil
	}
	return func(i int) bool {
		name := resp.Outputs[i].Name
		for _, o := range req.Outputs {
			if o.Name == name {
				if v, ok := o.Parameters[ParamBinaryData]; ok {
					return paramBool(v)
				}
			}
		}
		return all
	}
}

func paramBool(v any) bool {
	b, ok := v.(bool)
	return ok && b
}
