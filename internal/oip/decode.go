package oip

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The decoder is a hand-written, single-pass JSON reader specialised for the two OIP messages.
// encoding/json spends most of a 784-float request in its reflective scanner; this reader parses
// numbers straight into the typed data slice (pre-sized from the shape when the shape comes first)
// and allocates only the strings and slices it returns. It is strict: every syntax error, unknown
// field (requests), duplicate field, unsupported datatype, element-count mismatch or exceeded
// Limit is an error wrapping ErrBadRequest or ErrTooLarge.

// DecodeRequest decodes an inference request body strictly: unknown fields are rejected, every
// input needs name, datatype, shape and data, data may be flat or nested, and its element count
// must equal the product of the shape. Shapes are checked against a model by ValidateRequest.
func DecodeRequest(body []byte, lim Limits) (*InferenceRequest, error) {
	d := decoder{b: body, lim: lim.WithDefaults(), strict: true}
	if int64(len(body)) > d.lim.MaxBodyBytes {
		return nil, fmt.Errorf("%w: body is %d bytes, limit %d", ErrTooLarge, len(body), d.lim.MaxBodyBytes)
	}
	r := new(InferenceRequest)
	if err := d.request(r); err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeResponse decodes an inference response body. Unlike DecodeRequest it skips unknown
// fields, so that the Client interoperates with servers that add their own; everything else is
// checked as strictly.
func DecodeResponse(body []byte, lim Limits) (*InferenceResponse, error) {
	d := decoder{b: body, lim: lim.WithDefaults()}
	if int64(len(body)) > d.lim.MaxBodyBytes {
		return nil, fmt.Errorf("%w: body is %d bytes, limit %d", ErrTooLarge, len(body), d.lim.MaxBodyBytes)
	}
	r := new(InferenceResponse)
	if err := d.response(r); err != nil {
		return nil, err
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return r, nil
}

// UnmarshalJSON implements json.Unmarshaler with DecodeRequest and DefaultLimits.
func (r *InferenceRequest) UnmarshalJSON(b []byte) error {
	v, err := DecodeRequest(b, DefaultLimits())
	if err != nil {
		return err
	}
	*r = *v
	return nil
}

// UnmarshalJSON implements json.Unmarshaler with DecodeResponse and DefaultLimits.
func (r *InferenceResponse) UnmarshalJSON(b []byte) error {
	v, err := DecodeResponse(b, DefaultLimits())
	if err != nil {
		return err
	}
	*r = *v
	return nil
}

type decoder struct {
	b      []byte
	i      int
	lim    Limits
	strict bool  // reject unknown fields
	binary bool  // tensors may carry binary_data_size instead of data
	depth  int   // current nesting of objects and arrays
	total  int64 // elements decoded so far, over all tensors
	// want is the element count of the tensor whose data is being read, when its shape came
	// first (-1 otherwise): data beyond it is refused as it is read, not after it is buffered.
	want int64
}

func (d *decoder) syntax(what string) error {
	if d.i >= len(d.b) {
		return fmt.Errorf("%w: invalid JSON: unexpected end of input, expected %s", ErrBadRequest, what)
	}
	return fmt.Errorf("%w: invalid JSON at offset %d: unexpected %q, expected %s", ErrBadRequest, d.i, d.b[d.i], what)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// end checks that only whitespace follows the top-level value.
func (d *decoder) end() error {
	d.ws()
	if d.i != len(d.b) {
		return d.syntax("end of input")
	}
	return nil
}

// peek returns the next non-space byte without consuming it (0 at end of input).
func (d *decoder) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// open consumes c ('{' or '[') and enters one nesting level.
func (d *decoder) open(c byte, what string) error {
	if d.peek() != c {
		return d.syntax(what)
	}
	d.i++
	d.depth++
	if d.depth > d.lim.MaxDepth {
		return fmt.Errorf("%w: JSON nesting deeper than %d", ErrBadRequest, d.lim.MaxDepth)
	}
	return nil
}

// more reports whether another member (element) follows in the current object (array), consuming
// the separating comma, or consumes the closing byte and leaves the nesting level.
func (d *decoder) more(close byte, first bool) (bool, error) {
	c := d.peek()
	if c == close {
		d.i++
		d.depth--
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, d.syntax("',' or '" + string(close) + "'")
		}
		d.i++
		d.ws()
	}
	if d.i >= len(d.b) {
		return false, d.syntax("a value")
	}
	return true, nil
}

// key reads an object key and the colon after it. The returned slice may alias the input.
func (d *decoder) key() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.syntax("a string key")
	}
	k, err := d.rawString()
	if err != nil {
		return nil, err
	}
	if d.peek() != ':' {
		return nil, d.syntax("':'")
	}
	d.i++
	return k, nil
}

// unknown handles a key the message does not define.
func (d *decoder) unknown(where string, k []byte) error {
	if d.strict {
		return fmt.Errorf("%w: %s: unknown field %q", ErrBadRequest, where, k)
	}
	return d.skip()
}

// seen marks bit in *mask and rejects a repeated field.
func seen(mask *uint32, bit uint32, where, name string) error {
	if *mask&bit != 0 {
		return fmt.Errorf("%w: %s: duplicate field %q", ErrBadRequest, where, name)
	}
	*mask |= bit
	return nil
}

// rawString reads a JSON string and returns its unescaped bytes; the slice aliases the input when
// the string has no escapes.
func (d *decoder) rawString() ([]byte, error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, d.syntax("a string")
	}
	d.i++
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return nil, fmt.Errorf("%w: invalid UTF-8 in string at offset %d", ErrBadRequest, start)
			}
			return s, nil
		case c == '\\':
			return d.escapedString(start)
		case c < 0x20:
			return nil, d.syntax("no control character in a string")
		case c >= 0x80:
			ascii = false
		}
		d.i++
	}
	return nil, d.syntax("'\"'")
}

// escapedString continues rawString from d.i (at a backslash) into a fresh buffer.
func (d *decoder) escapedString(start int) ([]byte, error) {
	out := make([]byte, 0, d.i-start+16)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return nil, fmt.Errorf("%w: invalid UTF-8 in string at offset %d", ErrBadRequest, start)
			}
			return out, nil
		case c < 0x20:
			return nil, d.syntax("no control character in a string")
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		d.i++
		if d.i >= len(d.b) {
			return nil, d.syntax("an escape")
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.syntax("4 hex digits after \\u")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					save := d.i
					d.i += 2
					if v, ok := d.hex4(); ok {
						r2 = v
					} else {
						d.i = save
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			d.i--
			return nil, d.syntax("a valid escape")
		}
	}
	return nil, d.syntax("'\"'")
}

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.i += 4
	return r, true
}

func (d *decoder) str() (string, error) {
	if d.peek() != '"' {
		return "", d.syntax("a string")
	}
	b, err := d.rawString()
	return string(b), err
}

// number reads a JSON number, checking its grammar, and returns its bytes (aliasing the input).
// isInt reports that it has neither fraction nor exponent.
func (d *decoder) number() (num []byte, isInt bool, err error) {
	start := d.i
	b := d.b
	i := d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		d.i = i
		return nil, false, d.syntax("a number")
	}
	isInt = true
	if i < len(b) && b[i] == '.' {
		isInt = false
		i++
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			d.i = i
			return nil, false, d.syntax("a digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		isInt = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			d.i = i
			return nil, false, d.syntax("a digit in the exponent")
		}
	}
	d.i = i
	return b[start:i], isInt, nil
}

// literal consumes word ("true", "false", "null") if it is next.
func (d *decoder) literal(word string) bool {
	if len(d.b)-d.i >= len(word) && string(d.b[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

func (d *decoder) boolean() (bool, error) {
	switch d.peek() {
	case 't':
		if d.literal("true") {
			return true, nil
		}
	case 'f':
		if d.literal("false") {
			return false, nil
		}
	}
	return false, d.syntax("true or false")
}

// skip reads and discards any JSON value, checking its syntax.
func (d *decoder) skip() error {
	switch d.peek() {
	case '{':
		if err := d.open('{', "'{'"); err != nil {
			return err
		}
		for first := true; ; first = false {
			ok, err := d.more('}', first)
			if err != nil || !ok {
				return err
			}
			if _, err := d.key(); err != nil {
				return err
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	case '[':
		if err := d.open('[', "'['"); err != nil {
			return err
		}
		for first := true; ; first = false {
			ok, err := d.more(']', first)
			if err != nil || !ok {
				return err
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, err := d.rawString()
		return err
	case 't':
		if d.literal("true") {
			return nil
		}
	case 'f':
		if d.literal("false") {
			return nil
		}
	case 'n':
		if d.literal("null") {
			return nil
		}
	default:
		_, _, err := d.number()
		return err
	}
	return d.syntax("a value")
}

// parameters reads a "parameters" object whose values are strings, numbers or booleans.
func (d *decoder) parameters(where string) (Parameters, error) {
	if err := d.open('{', where+": parameters must be an object"); err != nil {
		return nil, err
	}
	p := Parameters{}
	for first := true; ; first = false {
		ok, err := d.more('}', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return p, nil
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		name := string(k)
		if _, dup := p[name]; dup {
			return nil, fmt.Errorf("%w: %s: duplicate parameter %q", ErrBadRequest, where, name)
		}
		switch c := d.peek(); {
		case c == '"':
			s, err := d.str()
			if err != nil {
				return nil, err
			}
			p[name] = s
		case c == 't' || c == 'f':
			v, err := d.boolean()
			if err != nil {
				return nil, err
			}
			p[name] = v
		case c == '-' || ('0' <= c && c <= '9'):
			n, _, err := d.number()
			if err != nil {
				return nil, err
			}
			p[name] = json.Number(n)
		default:
			return nil, fmt.Errorf("%w: %s: parameter %q must be a string, number or boolean", ErrBadRequest, where, name)
		}
	}
}

// shape reads a shape array of non-negative integers.
func (d *decoder) shape(where string) ([]int64, error) {
	if err := d.open('[', where+": shape must be an array"); err != nil {
		return nil, err
	}
	s := make([]int64, 0, 4)
	for first := true; ; first = false {
		ok, err := d.more(']', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return s, nil
		}
		n, isInt, err := d.number()
		if err != nil {
			return nil, err
		}
		v, perr := strconv.ParseInt(unsafeString(n), 10, 64)
		if !isInt || perr != nil || v < 0 {
			return nil, fmt.Errorf("%w: %s: shape[%d] = %s: dimensions must be integers >= 0", ErrBadRequest, where, len(s), n)
		}
		if len(s) >= d.lim.MaxDepth {
			return nil, fmt.Errorf("%w: %s: shape has more than %d dimensions", ErrBadRequest, where, d.lim.MaxDepth)
		}
		s = append(s, v)
	}
}

const (
	fName uint32 = 1 << iota
	fDatatype
	fShape
	fParameters
	fData
	fID
	fInputs
	fOutputs
	fModelName
	fModelVersion
)

// tensor reads one input or output tensor object.
func (d *decoder) tensor(t *Tensor, where string) error {
	if err := d.open('{', where+": must be an object"); err != nil {
		return err
	}
	var mask uint32
	dataAt := -1
	for first := true; ; first = false {
		ok, err := d.more('}', first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		k, err := d.key()
		if err != nil {
			return err
		}
		switch string(k) {
		case "name":
			if err := seen(&mask, fName, where, "name"); err != nil {
				return err
			}
			if t.Name, err = d.str(); err != nil {
				return err
			}
		case "datatype":
			if err := seen(&mask, fDatatype, where, "datatype"); err != nil {
				return err
			}
			s, err := d.str()
			if err != nil {
				return err
			}
			t.Datatype = Datatype(s)
			if !t.Datatype.Valid() {
				return fmt.Errorf("%w: %s: unsupported datatype %q (want FP32, FP64, INT32, INT64, BOOL or BYTES)", ErrBadRequest, where, s)
			}
		case "shape":
			if err := seen(&mask, fShape, where, "shape"); err != nil {
				return err
			}
			if t.Shape, err = d.shape(where); err != nil {
				return err
			}
		case "parameters":
			if err := seen(&mask, fParameters, where, "parameters"); err != nil {
				return err
			}
			if t.Parameters, err = d.parameters(where); err != nil {
				return err
			}
		case "data":
			if err := seen(&mask, fData, where, "data"); err != nil {
				return err
			}
			if mask&fDatatype == 0 {
				// The datatype comes later: remember where the data is and read it afterwards.
				d.ws()
				dataAt = d.i
				if err := d.skip(); err != nil {
					return err
				}
				continue
			}
			if err := d.data(t, mask&fShape != 0, where); err != nil {
				return err
			}
		default:
			if err := d.unknown(where, k); err != nil {
				return err
			}
		}
	}
	_, binary := t.Parameters[ParamBinaryDataSize]
	binary = binary && d.binary
	switch {
	case mask&fName == 0 || t.Name == "":
		return fmt.Errorf("%w: %s: missing name", ErrBadRequest, where)
	case mask&fDatatype == 0:
		return fmt.Errorf("%w: %s (%q): missing datatype", ErrBadRequest, where, t.Name)
	case mask&fShape == 0:
		return fmt.Errorf("%w: %s (%q): missing shape", ErrBadRequest, where, t.Name)
	case mask&fData == 0 && !binary:
		return fmt.Errorf("%w: %s (%q): missing data (send \"data\", or binary data with %s and the %s header)", ErrBadRequest, where, t.Name, ParamBinaryDataSize, HeaderInferenceHeaderLength)
	case mask&fData != 0 && binary:
		return fmt.Errorf("%w: %s (%q): both data and %s", ErrBadRequest, where, t.Name, ParamBinaryDataSize)
	case binary:
		return nil // filled from the binary section by fillBinary
	}
	if dataAt >= 0 {
		save, depth := d.i, d.depth
		d.i = dataAt
		if err := d.data(t, true, where); err != nil {
			return err
		}
		d.i, d.depth = save, depth
	}
	want, err := ShapeElements(t.Shape)
	if err != nil {
		return fmt.Errorf("%w: %s (%q): %v", ErrBadRequest, where, t.Name, err)
	}
	if got := int64(t.Len()); got != want {
		return fmt.Errorf("%w: %s (%q): data has %d elements, shape %v needs %d", ErrBadRequest, where, t.Name, got, t.Shape, want)
	}
	return nil
}

// data reads a flat or nested data array into the slice matching t.Datatype. When the shape is
// already known and within limits, the slice is allocated once at its final size.
func (d *decoder) data(t *Tensor, shapeKnown bool, where string) error {
	if d.peek() != '[' {
		return fmt.Errorf("%w: %s (%q): data must be an array", ErrBadRequest, where, t.Name)
	}
	d.want = -1
	if shapeKnown {
		if n, err := ShapeElements(t.Shape); err == nil {
			d.want = n
		}
		if n, err := ShapeElements(t.Shape); err == nil && n <= d.lim.MaxTensorElements && n <= d.lim.MaxTotalElements-d.total {
			switch t.Datatype {
			case DatatypeFP32:
				t.FP32 = make([]float32, 0, n)
			case DatatypeFP64:
				t.FP64 = make([]float64, 0, n)
			case DatatypeINT32:
				t.INT32 = make([]int32, 0, n)
			case DatatypeINT64:
				t.INT64 = make([]int64, 0, n)
			case DatatypeBOOL:
				t.BOOL = make([]bool, 0, n)
			case DatatypeBYTES:
				t.BYTES = make([]string, 0, n)
			}
		}
	}
	return d.dataArray(t, where)
}

func (d *decoder) dataArray(t *Tensor, where string) error {
	if err := d.open('[', "'['"); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := d.more(']', first)
		if err != nil || !ok {
			return err
		}
		if d.b[d.i] == '[' {
			if err := d.dataArray(t, where); err != nil {
				return err
			}
			continue
		}
		if d.want >= 0 && int64(t.Len()) >= d.want {
			return fmt.Errorf("%w: %s (%q): data has more elements than shape %v needs (%d)", ErrBadRequest, where, t.Name, t.Shape, d.want)
		}
		if int64(t.Len()) >= d.lim.MaxTensorElements {
			return fmt.Errorf("%w: %s (%q): more than %d elements", ErrTooLarge, where, t.Name, d.lim.MaxTensorElements)
		}
		if d.total >= d.lim.MaxTotalElements {
			return fmt.Errorf("%w: more than %d elements in all tensors", ErrTooLarge, d.lim.MaxTotalElements)
		}
		d.total++
		if err := d.element(t, where); err != nil {
			return err
		}
	}
}

// element reads one data element of t.Datatype.
func (d *decoder) element(t *Tensor, where string) error {
	switch t.Datatype {
	case DatatypeBOOL:
		v, err := d.boolean()
		if err != nil {
			return fmt.Errorf("%w: %s (%q): BOOL data must be true or false", ErrBadRequest, where, t.Name)
		}
		t.BOOL = append(t.BOOL, v)
		return nil
	case DatatypeBYTES:
		if d.b[d.i] != '"' {
			return fmt.Errorf("%w: %s (%q): BYTES data must be strings", ErrBadRequest, where, t.Name)
		}
		s, err := d.str()
		if err != nil {
			return err
		}
		t.BYTES = append(t.BYTES, s)
		return nil
	}
	if t.Datatype == DatatypeFP32 || t.Datatype == DatatypeFP64 {
		// One-pass fast path for plain decimals; anything else is re-read below.
		start := d.i
		if f, exact, ok := d.scanDecimal(); ok {
			if t.Datatype == DatatypeFP64 && exact {
				t.FP64 = append(t.FP64, f)
				return nil
			}
			if t.Datatype == DatatypeFP32 && safeForFloat32(f, exact) {
				t.FP32 = append(t.FP32, float32(f))
				return nil
			}
		}
		d.i = start
	}
	n, isInt, err := d.number()
	if err != nil {
		return fmt.Errorf("%w: %s (%q): %s data must be numbers", ErrBadRequest, where, t.Name, t.Datatype)
	}
	switch t.Datatype {
	case DatatypeFP32:
		v, ok := parseFloat32(n)
		if !ok {
			return fmt.Errorf("%w: %s (%q): %s is out of FP32 range", ErrBadRequest, where, t.Name, n)
		}
		t.FP32 = append(t.FP32, v)
	case DatatypeFP64:
		v, ok := parseFloat64(n)
		if !ok {
			return fmt.Errorf("%w: %s (%q): %s is out of FP64 range", ErrBadRequest, where, t.Name, n)
		}
		t.FP64 = append(t.FP64, v)
	case DatatypeINT32, DatatypeINT64:
		bits := 64
		if t.Datatype == DatatypeINT32 {
			bits = 32
		}
		v, err := strconv.ParseInt(unsafeString(n), 10, bits)
		if !isInt || err != nil {
			return fmt.Errorf("%w: %s (%q): %s is not an %s", ErrBadRequest, where, t.Name, n, t.Datatype)
		}
		if bits == 32 {
			t.INT32 = append(t.INT32, int32(v))
		} else {
			t.INT64 = append(t.INT64, v)
		}
	}
	return nil
}

// float64Pow10 holds the powers of ten that are exact in float64.
var float64Pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastDecimal converts a plain decimal (no exponent) with at most 15 significant digits and 22
// fraction digits by Clinger's fast path: the mantissa (< 10^15 < 2^53) and the power of ten are
// exact in float64, so one division gives the correctly rounded float64. ok is false for every
// other form, which the callers hand to strconv.ParseFloat.
func fastDecimal(n []byte) (f float64, ok bool) {
	i, neg := 0, false
	if n[0] == '-' {
		neg, i = true, 1
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(n); i++ {
		c := n[i]
		if c == '.' {
			dot = true
			continue
		}
		if c < '0' || c > '9' {
			return 0, false // exponent
		}
		if m == 0 && c == '0' {
			if dot {
				frac++
			}
			continue // leading zeros are not significant
		}
		digits++
		if digits > 15 {
			return 0, false
		}
		m = m*10 + uint64(c-'0')
		if dot {
			frac++
		}
	}
	if frac >= len(float64Pow10) {
		return 0, false
	}
	f = float64(m) / float64Pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// scanDecimal reads, in one pass, a plain JSON decimal (no exponent) at d.i with at most 19
// significant digits and 22 fraction digits. With at most 15 digits (exact) the result is the
// correctly rounded float64 (Clinger's fast path, as in fastDecimal); with 16 to 19 digits — the
// float64 text that Python and JavaScript clients write — the mantissa conversion and the division
// each round once, so the result is within 2 float64 ulps of the true value, which is enough to
// round it to float32 correctly away from midpoints (safeForFloat32). On any other input it returns
// ok == false and consumes nothing; the caller then re-reads the number with number and strconv.
// A malformed continuation such as "01" stops after the "0" and is rejected by the caller's
// separator check.
func (d *decoder) scanDecimal() (f float64, exact, ok bool) {
	b, i, neg := d.b, d.i, false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) {
		return 0, false, false
	}
	var m uint64
	digits, frac := 0, 0
	switch c := b[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			m = m*10 + uint64(b[i]-'0')
			digits++
			i++
		}
	default:
		return 0, false, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			if m != 0 || b[i] != '0' {
				m = m*10 + uint64(b[i]-'0')
				digits++
			}
			frac++
			i++
		}
		if i == start {
			return 0, false, false
		}
	}
	if digits > 19 || frac >= len(float64Pow10) || (i < len(b) && (b[i] == 'e' || b[i] == 'E')) {
		return 0, false, false
	}
	d.i = i
	f = float64(m) / float64Pow10[frac]
	if neg {
		f = -f
	}
	return f, digits <= 15, true
}

// safeForFloat32 reports whether rounding f to float32 gives the float32 nearest to the decimal
// f was computed from. Rounding is monotonic and float32 rounding midpoints are exact in float64
// (their low 29 mantissa bits are 1<<28), so double rounding can only go wrong when f is within
// its error bound of a midpoint: exactly on one for an exact f, within 2 ulps otherwise (4 are
// allowed for margin). Such values, about 1 in 10^8, take the strconv path. Values from
// scanDecimal lie in (10^-23, 10^19), far from float32 overflow and subnormals.
func safeForFloat32(f float64, exact bool) bool {
	low := int64(math.Float64bits(f) & (1<<29 - 1))
	if exact {
		return low != 1<<28
	}
	return low < 1<<28-4 || low > 1<<28+4
}

// parseFloat32 converts a JSON number (grammar already checked) to the nearest float32, exactly
// as strconv.ParseFloat(s, 32) does. The fast path rounds the correctly rounded float64 of
// fastDecimal to float32; that double rounding can only differ from direct rounding when the
// float64 lands exactly on a float32 rounding midpoint (low 29 mantissa bits = 1<<28; rounding is
// monotonic and midpoints are exact in float64), and those rare values take the slow path. Values
// from fastDecimal are below 10^15 and above 10^-22, so neither overflow nor float32 subnormals
// arise on the fast path.
func parseFloat32(n []byte) (float32, bool) {
	if f, ok := fastDecimal(n); ok && math.Float64bits(f)&(1<<29-1) != 1<<28 {
		return float32(f), true
	}
	f, err := strconv.ParseFloat(unsafeString(n), 32)
	return float32(f), err == nil
}

// parseFloat64 converts a JSON number to the nearest float64, as strconv.ParseFloat(s, 64).
func parseFloat64(n []byte) (float64, bool) {
	if f, ok := fastDecimal(n); ok {
		return f, true
	}
	f, err := strconv.ParseFloat(unsafeString(n), 64)
	return f, err == nil
}

// unsafeString views b as a string for strconv, which does not retain its argument (its errors
// copy the text).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// tensors reads an array of tensor objects.
func (d *decoder) tensors(field string) ([]Tensor, error) {
	if err := d.open('[', field+" must be an array"); err != nil {
		return nil, err
	}
	var ts []Tensor
	for first := true; ; first = false {
		ok, err := d.more(']', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return ts, nil
		}
		if len(ts) >= d.lim.MaxTensors {
			return nil, fmt.Errorf("%w: more than %d %s", ErrTooLarge, d.lim.MaxTensors, field)
		}
		ts = append(ts, Tensor{})
		where := field + "[" + strconv.Itoa(len(ts)-1) + "]"
		if err := d.tensor(&ts[len(ts)-1], where); err != nil {
			return nil, err
		}
	}
}

// request reads an InferenceRequest object.
func (d *decoder) request(r *InferenceRequest) error {
	if err := d.open('{', "a JSON object"); err != nil {
		return err
	}
	var mask uint32
	for first := true; ; first = false {
		ok, err := d.more('}', first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		k, err := d.key()
		if err != nil {
			return err
		}
		switch string(k) {
		case "id":
			if err := seen(&mask, fID, "request", "id"); err != nil {
				return err
			}
			if r.ID, err = d.str(); err != nil {
				return err
			}
		case "parameters":
			if err := seen(&mask, fParameters, "request", "parameters"); err != nil {
				return err
			}
			if r.Parameters, err = d.parameters("request"); err != nil {
				return err
			}
		case "inputs":
			if err := seen(&mask, fInputs, "request", "inputs"); err != nil {
				return err
			}
			if r.Inputs, err = d.tensors("inputs"); err != nil {
				return err
			}
		case "outputs":
			if err := seen(&mask, fOutputs, "request", "outputs"); err != nil {
				return err
			}
			if r.Outputs, err = d.requestedOutputs(); err != nil {
				return err
			}
		default:
			if err := d.unknown("request", k); err != nil {
				return err
			}
		}
	}
	if len(r.Inputs) == 0 {
		return fmt.Errorf("%w: request: missing inputs", ErrBadRequest)
	}
	for i := range r.Inputs {
		for j := range i {
			if r.Inputs[j].Name == r.Inputs[i].Name {
				return fmt.Errorf("%w: inputs[%d]: duplicate input %q", ErrBadRequest, i, r.Inputs[i].Name)
			}
		}
	}
	return nil
}

// requestedOutputs reads the request's "outputs" array of {name, parameters}.
func (d *decoder) requestedOutputs() ([]RequestedOutput, error) {
	if err := d.open('[', "outputs must be an array"); err != nil {
		return nil, err
	}
	var outs []RequestedOutput
	for first := true; ; first = false {
		ok, err := d.more(']', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return outs, nil
		}
		if len(outs) >= d.lim.MaxTensors {
			return nil, fmt.Errorf("%w: more than %d outputs", ErrTooLarge, d.lim.MaxTensors)
		}
		where := "outputs[" + strconv.Itoa(len(outs)) + "]"
		var o RequestedOutput
		if err := d.open('{', where+": must be an object"); err != nil {
			return nil, err
		}
		var mask uint32
		for first := true; ; first = false {
			ok, err := d.more('}', first)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			k, err := d.key()
			if err != nil {
				return nil, err
			}
			switch string(k) {
			case "name":
				if err := seen(&mask, fName, where, "name"); err != nil {
					return nil, err
				}
				if o.Name, err = d.str(); err != nil {
					return nil, err
				}
			case "parameters":
				if err := seen(&mask, fParameters, where, "parameters"); err != nil {
					return nil, err
				}
				if o.Parameters, err = d.parameters(where); err != nil {
					return nil, err
				}
			default:
				if err := d.unknown(where, k); err != nil {
					return nil, err
				}
			}
		}
		if o.Name == "" {
			return nil, fmt.Errorf("%w: %s: missing name", ErrBadRequest, where)
		}
		outs = append(outs, o)
	}
}

// response reads an InferenceResponse object.
func (d *decoder) response(r *InferenceResponse) error {
	if err := d.open('{', "a JSON object"); err != nil {
		return err
	}
	var mask uint32
	for first := true; ; first = false {
		ok, err := d.more('}', first)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		k, err := d.key()
		if err != nil {
			return err
		}
		switch string(k) {
		case "model_name":
			if err := seen(&mask, fModelName, "response", "model_name"); err != nil {
				return err
			}
			if r.ModelName, err = d.str(); err != nil {
				return err
			}
		case "model_version":
			if err := seen(&mask, fModelVersion, "response", "model_version"); err != nil {
				return err
			}
			if r.ModelVersion, err = d.str(); err != nil {
				return err
			}
		case "id":
			if err := seen(&mask, fID, "response", "id"); err != nil {
				return err
			}
			if r.ID, err = d.str(); err != nil {
				return err
			}
		case "parameters":
			if err := seen(&mask, fParameters, "response", "parameters"); err != nil {
				return err
			}
			if r.Parameters, err = d.parameters("response"); err != nil {
				return err
			}
		case "outputs":
			if err := seen(&mask, fOutputs, "response", "outputs"); err != nil {
				return err
			}
			if r.Outputs, err = d.tensors("outputs"); err != nil {
				return err
			}
		default:
			if err := d.unknown("response", k); err != nil {
				return err
			}
		}
	}
	return nil
}
