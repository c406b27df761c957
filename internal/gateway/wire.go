package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// inferRequest is the OIP v2 REST inference request as the gateway needs it: tensor data stays
// raw JSON so that batching concatenates numbers without parsing them into floats.
type inferRequest struct {
	ID         string                     `json:"id,omitempty"`
	Parameters map[string]json.RawMessage `json:"parameters,omitempty"`
	Inputs     []wireTensor               `json:"inputs"`
	Outputs    []json.RawMessage          `json:"outputs,omitempty"`
}

// inferResponse is the OIP v2 REST inference response.
type inferResponse struct {
	ModelName    string                     `json:"model_name"`
	ModelVersion string                     `json:"model_version,omitempty"`
	ID           string                     `json:"id,omitempty"`
	Parameters   map[string]json.RawMessage `json:"parameters,omitempty"`
	Outputs      []wireTensor               `json:"outputs"`
}

// wireTensor is one input or output tensor on the wire.
type wireTensor struct {
	Name       string                     `json:"name"`
	Shape      []int64                    `json:"shape"`
	Datatype   string                     `json:"datatype"`
	Parameters map[string]json.RawMessage `json:"parameters,omitempty"`
	Data       json.RawMessage            `json:"data"`
}

// TensorSpec describes one model input: its name, OIP datatype and shape, with -1 for a
// variable dimension (the first dimension is the batch).
type TensorSpec struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// modelMetadata is the OIP v2 model metadata response.
type modelMetadata struct {
	Name     string       `json:"name"`
	Versions []string     `json:"versions,omitempty"`
	Platform string       `json:"platform"`
	Inputs   []TensorSpec `json:"inputs"`
	Outputs  []TensorSpec `json:"outputs"`
}

// numericTypes are the OIP datatypes whose data is a JSON array of numbers (or booleans).
var numericTypes = map[string]bool{
	"BOOL": true, "UINT8": true, "UINT16": true, "UINT32": true, "UINT64": true,
	"INT8": true, "INT16": true, "INT32": true, "INT64": true,
	"FP16": true, "FP32": true, "FP64": true,
}

// flattenData appends the scalars of a (possibly nested) JSON array of numbers or booleans to dst,
// separated by commas without brackets, and returns dst and the number of scalars. It validates
// the JSON as it goes and never converts a number, so that it costs one pass over the bytes.
func flattenData(dst []byte, raw []byte) ([]byte, int, error) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return dst, 0, fmt.Errorf("data: want a JSON array")
	}
	n, depth := 0, 0
	expectValue := true // after '[' or ','
	afterComma := false
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			i++
		case c == '[':
			if !expectValue {
				return dst, 0, fmt.Errorf("data: unexpected '[' at byte %d", i)
			}
			depth++
			afterComma = false
			i++
		case c == ']':
			if depth == 0 || afterComma {
				return dst, 0, fmt.Errorf("data: unbalanced ']' at byte %d", i)
			}
			depth--
			i++
			expectValue = false
			if depth == 0 {
				if j := skipSpace(raw, i); j != len(raw) {
					return dst, 0, fmt.Errorf("data: trailing bytes at %d", j)
				}
				return dst, n, nil
			}
		case c == ',':
			if expectValue {
				return dst, 0, fmt.Errorf("data: unexpected ',' at byte %d", i)
			}
			expectValue = true
			afterComma = true
			i++
		default:
			if !expectValue {
				return dst, 0, fmt.Errorf("data: missing ',' at byte %d", i)
			}
			end, err := scanScalar(raw, i)
			if err != nil {
				return dst, 0, err
			}
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, raw[i:end]...)
			n++
			i = end
			expectValue = false
			afterComma = false
		}
	}
	return dst, 0, fmt.Errorf("data: unterminated array")
}

// splitScalars flattens a JSON array like flattenData and returns the flat bytes together with
// the [start, end) offset of every scalar in them, in row-major order.
func splitScalars(raw []byte) ([]byte, [][2]int, error) {
	flat, n, err := flattenData(make([]byte, 0, len(raw)), raw)
	if err != nil {
		return nil, nil, err
	}
	offs := make([][2]int, 0, n)
	start := 0
	for i := 0; i <= len(flat); i++ {
		if i == len(flat) || flat[i] == ',' {
			if i > start {
				offs = append(offs, [2]int{start, i})
			}
			start = i + 1
		}
	}
	return flat, offs, nil
}

// scanScalar returns the end offset of the JSON number or boolean starting at raw[i].
func scanScalar(raw []byte, i int) (int, error) {
	switch {
	case bytes.HasPrefix(raw[i:], []byte("true")):
		return i + 4, nil
	case bytes.HasPrefix(raw[i:], []byte("false")):
		return i + 5, nil
	}
	j := i
	if j < len(raw) && raw[j] == '-' {
		j++
	}
	digits := 0
	for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
		j++
		digits++
	}
	if digits == 0 {
		return 0, fmt.Errorf("data: not a number at byte %d", i)
	}
	if j < len(raw) && raw[j] == '.' {
		j++
		d := 0
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
			d++
		}
		if d == 0 {
			return 0, fmt.Errorf("data: bad number at byte %d", i)
		}
	}
	if j < len(raw) && (raw[j] == 'e' || raw[j] == 'E') {
		j++
		if j < len(raw) && (raw[j] == '+' || raw[j] == '-') {
			j++
		}
		d := 0
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
			d++
		}
		if d == 0 {
			return 0, fmt.Errorf("data: bad exponent at byte %d", i)
		}
	}
	return j, nil
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\n' || raw[i] == '\t' || raw[i] == '\r') {
		i++
	}
	return i
}

// parseTimeout reads the OIP "timeout" parameter, in microseconds, from request parameters.
func parseTimeout(params map[string]json.RawMessage) (int64, error) {
	raw, ok := params["timeout"]
	if !ok {
		return 0, nil
	}
	s := string(bytes.TrimSpace(raw))
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("parameters.timeout: want a positive integer of microseconds, got %s", raw)
	}
	return v, nil
}
