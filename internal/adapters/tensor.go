package adapters

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/sloserve/sloserve/internal/oip"
)

// toTensor converts a JSON value (a scalar or nested arrays, as decoded with UseNumber) into a
// tensor of datatype dt: the shape is read from the nesting, which must be rectangular, and the
// elements are converted to dt. BYTES elements are strings or TF Serving's {"b64": "..."}
// objects. lim bounds the element count and the nesting depth. Errors wrap oip.ErrBadRequest
// (or oip.ErrTooLarge) and name the tensor.
func toTensor(name string, dt oip.Datatype, v any, lim oip.Limits) (oip.Tensor, error) {
	t := oip.Tensor{Name: name, Datatype: dt}
	// The shape is the lengths along the first element of each level; flatten checks the rest.
	for x := v; ; {
		arr, ok := x.([]any)
		if !ok {
			break
		}
		if len(t.Shape) >= lim.MaxDepth {
			return t, fmt.Errorf("%w: input %q: nested deeper than %d", oip.ErrBadRequest, name, lim.MaxDepth)
		}
		t.Shape = append(t.Shape, int64(len(arr)))
		if len(arr) == 0 {
			break
		}
		x = arr[0]
	}
	n, err := oip.ShapeElements(t.Shape)
	if err != nil {
		return t, fmt.Errorf("%w: input %q: %v", oip.ErrBadRequest, name, err)
	}
	if n > lim.MaxTensorElements {
		return t, fmt.Errorf("%w: input %q: %d elements, limit %d", oip.ErrTooLarge, name, n, lim.MaxTensorElements)
	}
	f := flattener{t: &t}
	if err := f.flatten(v, 0); err != nil {
		return t, err
	}
	return t, nil
}

type flattener struct {
	t *oip.Tensor
}

func (f *flattener) flatten(v any, dim int) error {
	t := f.t
	if dim < len(t.Shape) {
		arr, ok := v.([]any)
		if !ok || int64(len(arr)) != t.Shape[dim] {
			return fmt.Errorf("%w: input %q: ragged array: every element at depth %d must be an array of %d", oip.ErrBadRequest, t.Name, dim, t.Shape[dim])
		}
		for _, x := range arr {
			if err := f.flatten(x, dim+1); err != nil {
				return err
			}
		}
		return nil
	}
	return f.element(v)
}

func (f *flattener) element(v any) error {
	t := f.t
	bad := func(want string) error {
		return fmt.Errorf("%w: input %q: element %d is %s, want %s for %s", oip.ErrBadRequest, t.Name, t.Len(), describe(v), want, t.Datatype)
	}
	switch t.Datatype {
	case oip.DatatypeFP32, oip.DatatypeFP64:
		num, ok := v.(json.Number)
		if !ok {
			return bad("a number")
		}
		x, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return bad("a finite number")
		}
		if t.Datatype == oip.DatatypeFP32 {
			if math.Abs(x) > math.MaxFloat32 {
				return bad("a number within FP32 range")
			}
			t.FP32 = append(t.FP32, float32(x))
		} else {
			t.FP64 = append(t.FP64, x)
		}
	case oip.DatatypeINT32, oip.DatatypeINT64:
		num, ok := v.(json.Number)
		if !ok {
			return bad("an integer")
		}
		bits := 64
		if t.Datatype == oip.DatatypeINT32 {
			bits = 32
		}
		x, err := strconv.ParseInt(string(num), 10, bits)
		if err != nil {
			return bad(fmt.Sprintf("an integer within INT%d range", bits))
		}
		if bits == 32 {
			t.INT32 = append(t.INT32, int32(x))
		} else {
			t.INT64 = append(t.INT64, x)
		}
	case oip.DatatypeBOOL:
		b, ok := v.(bool)
		if !ok {
			return bad("true or false")
		}
		t.BOOL = append(t.BOOL, b)
	case oip.DatatypeBYTES:
		switch x := v.(type) {
		case string:
			t.BYTES = append(t.BYTES, x)
		case map[string]any:
			s, ok := x["b64"].(string)
			if !ok || len(x) != 1 {
				return bad(`a string or {"b64": "..."}`)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return bad("valid base64 in b64")
			}
			t.BYTES = append(t.BYTES, string(b))
		default:
			return bad(`a string or {"b64": "..."}`)
		}
	default:
		return fmt.Errorf("%w: input %q: unsupported datatype %q", oip.ErrBadRequest, t.Name, t.Datatype)
	}
	return nil
}

// describe names a decoded JSON value's kind for error messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// fromTensor returns t as nested arrays following its shape (a scalar for rank 0). FP32 elements
// are written in their shortest float32 form; NaN and infinities become null, which JSON can
// carry.
func fromTensor(t *oip.Tensor) (any, error) {
	n, err := oip.ShapeElements(t.Shape)
	if err != nil || int64(t.Len()) != n {
		return nil, fmt.Errorf("%w: output %q: %d elements for shape %v", oip.ErrInternal, t.Name, t.Len(), t.Shape)
	}
	i := 0
	var build func(dim int) any
	build = func(dim int) any {
		if dim == len(t.Shape) {
			v := elementJSON(t, i)
			i++
			return v
		}
		arr := make([]any, t.Shape[dim])
		for k := range arr {
			arr[k] = build(dim + 1)
		}
		return arr
	}
	return build(0), nil
}

func elementJSON(t *oip.Tensor, i int) any {
	finite := func(f float64) any {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	}
	switch t.Datatype {
	case oip.DatatypeFP32:
		// Print the float32's shortest form rather than its float64 widening (0.1, not 0.10000000149).
		f := float64(t.FP32[i])
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 32))
	case oip.DatatypeFP64:
		return finite(t.FP64[i])
	case oip.DatatypeINT32:
		return t.INT32[i]
	case oip.DatatypeINT64:
		return t.INT64[i]
	case oip.DatatypeBOOL:
		return t.BOOL[i]
	case oip.DatatypeBYTES:
		return t.BYTES[i]
	}
	return nil
}
