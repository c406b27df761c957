package oipgrpc

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/sloserve/sloserve/internal/oip"
)

// rawSize is the width in bytes of one element of a fixed-size datatype in raw contents.
func rawSize(dt oip.Datatype) int {
	switch dt {
	case oip.DatatypeFP32, oip.DatatypeINT32:
		return 4
	case oip.DatatypeFP64, oip.DatatypeINT64:
		return 8
	case oip.DatatypeBOOL:
		return 1
	}
	return 0
}

// DecodeRaw fills the data slice of t that matches t.Datatype from raw (sharing raw's memory
// when the host is little-endian and raw is aligned: raw must not be written afterwards), the tensor's entry of
// raw_input_contents (or raw_output_contents): the flattened row-major elements, little-endian,
// with no padding; BOOL is one byte per element (0 or 1); each BYTES element is a 4-byte
// little-endian length followed by that many bytes. t.Shape must be set: the element count it
// implies must match raw exactly and stay within lim.MaxTensorElements. Errors wrap
// oip.ErrBadRequest (or oip.ErrTooLarge) and name the tensor.
func DecodeRaw(t *oip.Tensor, raw []byte, lim oip.Limits) error {
	n, err := oip.ShapeElements(t.Shape)
	if err != nil {
		return fmt.Errorf("%w: tensor %q: %v", oip.ErrBadRequest, t.Name, err)
	}
	if n > lim.MaxTensorElements {
		return fmt.Errorf("%w: tensor %q: %d elements, limit %d", oip.ErrTooLarge, t.Name, n, lim.MaxTensorElements)
	}
	if t.Datatype == oip.DatatypeBYTES {
		return decodeRawBytes(t, raw, n)
	}
	size := rawSize(t.Datatype)
	if size == 0 {
		return fmt.Errorf("%w: tensor %q: unsupported datatype %q (want FP32, FP64, INT32, INT64, BOOL or BYTES)", oip.ErrBadRequest, t.Name, t.Datatype)
	}
	if int64(len(raw)) != n*int64(size) {
		return fmt.Errorf("%w: tensor %q: raw contents are %d bytes, shape %v of %s needs %d", oip.ErrBadRequest, t.Name, len(raw), t.Shape, t.Datatype, n*int64(size))
	}
	if littleEndian && t.Datatype != oip.DatatypeBOOL {
		if !aliasRaw(t, raw, n) {
			copyRaw(t, raw, n)
		}
		return nil
	}
	switch t.Datatype {
	case oip.DatatypeFP32:
		t.FP32 = make([]float32, n)
		for i := range t.FP32 {
			t.FP32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case oip.DatatypeFP64:
		t.FP64 = make([]float64, n)
		for i := range t.FP64 {
			t.FP64[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	case oip.DatatypeINT32:
		t.INT32 = make([]int32, n)
		for i := range t.INT32 {
			t.INT32[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case oip.DatatypeINT64:
		t.INT64 = make([]int64, n)
		for i := range t.INT64 {
			t.INT64[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	case oip.DatatypeBOOL:
		t.BOOL = make([]bool, n)
		for i, b := range raw {
			switch b {
			case 0:
			case 1:
				t.BOOL[i] = true
			default:
				return fmt.Errorf("%w: tensor %q: raw BOOL element %d is %d, want 0 or 1", oip.ErrBadRequest, t.Name, i, b)
			}
		}
	}
	return nil
}

// littleEndian reports whether this machine stores numbers little-endian, as raw contents do,
// so that fixed-size elements can be copied instead of converted one by one.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// aliasRaw points t's data slice at raw's memory when raw is aligned for t's datatype, sparing a
// copy of the tensor (the protobuf decoder already copied it out of the transport's buffers, into
// memory of its own that nothing else writes). It reports whether it did.
func aliasRaw(t *oip.Tensor, raw []byte, n int64) bool {
	if n == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%uintptr(rawSize(t.Datatype)) != 0 {
		return false
	}
	p := unsafe.Pointer(unsafe.SliceData(raw))
	switch t.Datatype {
	case oip.DatatypeFP32:
		t.FP32 = unsafe.Slice((*float32)(p), n)
	case oip.DatatypeFP64:
		t.FP64 = unsafe.Slice((*float64)(p), n)
	case oip.DatatypeINT32:
		t.INT32 = unsafe.Slice((*int32)(p), n)
	case oip.DatatypeINT64:
		t.INT64 = unsafe.Slice((*int64)(p), n)
	default:
		return false
	}
	return true
}

// copyRaw allocates t's data slice for n elements and copies raw into its memory; only on
// little-endian machines, for the fixed-size numeric datatypes, with len(raw) checked by the
// caller.
func copyRaw(t *oip.Tensor, raw []byte, n int64) {
	var dst unsafe.Pointer
	switch t.Datatype {
	case oip.DatatypeFP32:
		t.FP32 = make([]float32, n)
		dst = unsafe.Pointer(unsafe.SliceData(t.FP32))
	case oip.DatatypeFP64:
		t.FP64 = make([]float64, n)
		dst = unsafe.Pointer(unsafe.SliceData(t.FP64))
	case oip.DatatypeINT32:
		t.INT32 = make([]int32, n)
		dst = unsafe.Pointer(unsafe.SliceData(t.INT32))
	case oip.DatatypeINT64:
		t.INT64 = make([]int64, n)
		dst = unsafe.Pointer(unsafe.SliceData(t.INT64))
	}
	if len(raw) > 0 {
		copy(unsafe.Slice((*byte)(dst), len(raw)), raw)
	}
}

// fixedMemory returns the memory of t's FP32, FP64, INT32 or INT64 data as bytes (shared), nil
// when t has another datatype or no elements.
func fixedMemory(t *oip.Tensor) []byte {
	var p unsafe.Pointer
	var n int
	switch t.Datatype {
	case oip.DatatypeFP32:
		p, n = unsafe.Pointer(unsafe.SliceData(t.FP32)), 4*len(t.FP32)
	case oip.DatatypeFP64:
		p, n = unsafe.Pointer(unsafe.SliceData(t.FP64)), 8*len(t.FP64)
	case oip.DatatypeINT32:
		p, n = unsafe.Pointer(unsafe.SliceData(t.INT32)), 4*len(t.INT32)
	case oip.DatatypeINT64:
		p, n = unsafe.Pointer(unsafe.SliceData(t.INT64)), 8*len(t.INT64)
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

// decodeRawBytes reads n length-prefixed BYTES elements that must use up raw exactly.
func decodeRawBytes(t *oip.Tensor, raw []byte, n int64) error {
	// Every element takes at least its 4-byte prefix, which bounds the allocation by len(raw).
	if n > int64(len(raw))/4 {
		return fmt.Errorf("%w: tensor %q: raw contents are %d bytes, too short for %d BYTES elements", oip.ErrBadRequest, t.Name, len(raw), n)
	}
	t.BYTES = make([]string, n)
	for i := range t.BYTES {
		if len(raw) < 4 {
			return fmt.Errorf("%w: tensor %q: raw BYTES element %d: truncated length prefix", oip.ErrBadRequest, t.Name, i)
		}
		l := binary.LittleEndian.Uint32(raw)
		raw = raw[4:]
		if uint64(l) > uint64(len(raw)) {
			return fmt.Errorf("%w: tensor %q: raw BYTES element %d: length %d exceeds the %d bytes left", oip.ErrBadRequest, t.Name, i, l, len(raw))
		}
		t.BYTES[i] = string(raw[:l])
		raw = raw[l:]
	}
	if len(raw) != 0 {
		return fmt.Errorf("%w: tensor %q: %d bytes of raw contents left after %d BYTES elements", oip.ErrBadRequest, t.Name, len(raw), n)
	}
	return nil
}

// AppendRaw appends the raw encoding of t's data (as DecodeRaw reads it) to dst. It fails only
// for an unsupported datatype.
func AppendRaw(dst []byte, t *oip.Tensor) ([]byte, error) {
	if size := rawSize(t.Datatype); size > 0 {
		dst = slices.Grow(dst, size*t.Len())
	}
	if littleEndian {
		if mem := fixedMemory(t); mem != nil {
			return append(dst, mem...), nil
		}
	}
	switch t.Datatype {
	case oip.DatatypeFP32:
		for _, v := range t.FP32 {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case oip.DatatypeFP64:
		for _, v := range t.FP64 {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
		}
	case oip.DatatypeINT32:
		for _, v := range t.INT32 {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		}
	case oip.DatatypeINT64:
		for _, v := range t.INT64 {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
	case oip.DatatypeBOOL:
		for _, v := range t.BOOL {
			b := byte(0)
			if v {
				b = 1
			}
			dst = append(dst, b)
		}
	case oip.DatatypeBYTES:
		for _, v := range t.BYTES {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
			dst = append(dst, v...)
		}
	default:
		return dst, fmt.Errorf("%w: tensor %q: unsupported datatype %q", oip.ErrBadRequest, t.Name, t.Datatype)
	}
	return dst, nil
}
