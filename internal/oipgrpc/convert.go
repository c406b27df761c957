package oipgrpc

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/sloserve/sloserve/internal/oip"
	pb "github.com/sloserve/sloserve/internal/oipgrpc/inferencepb"
)

// DecodeRequest converts a gRPC ModelInferRequest into the oip request the REST decoder would
// produce for the same tensors: raw_input_contents (one entry per input, see DecodeRaw) or the
// typed contents are decoded into the tensors' data; each tensor's element count must match its
// shape; int64 parameters become json.Number as in the REST path. Limits bound the number of
// tensors and elements. Errors wrap oip.ErrBadRequest or oip.ErrTooLarge.
func DecodeRequest(in *pb.ModelInferRequest, lim oip.Limits) (*oip.InferenceRequest, error) {
	inputs := in.GetInputs()
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%w: request: missing inputs", oip.ErrBadRequest)
	}
	if len(inputs) > lim.MaxTensors || len(in.GetOutputs()) > lim.MaxTensors {
		return nil, fmt.Errorf("%w: more than %d inputs or outputs", oip.ErrTooLarge, lim.MaxTensors)
	}
	raw := in.GetRawInputContents()
	if len(raw) > 0 && len(raw) != len(inputs) {
		return nil, fmt.Errorf("%w: raw_input_contents has %d entries for %d inputs", oip.ErrBadRequest, len(raw), len(inputs))
	}
	params, err := fromParams(in.GetParameters(), "request")
	if err != nil {
		return nil, err
	}
	req := &oip.InferenceRequest{ID: in.GetId(), Parameters: params, Inputs: make([]oip.Tensor, len(inputs))}
	var total int64
	for i, pt := range inputs {
		t := &req.Inputs[i]
		where := "inputs[" + strconv.Itoa(i) + "]"
		t.Name, t.Datatype, t.Shape = pt.GetName(), oip.Datatype(pt.GetDatatype()), pt.GetShape()
		if t.Name == "" {
			return nil, fmt.Errorf("%w: %s: missing name", oip.ErrBadRequest, where)
		}
		for j := range i {
			if req.Inputs[j].Name == t.Name {
				return nil, fmt.Errorf("%w: %s: duplicate input %q", oip.ErrBadRequest, where, t.Name)
			}
		}
		if !t.Datatype.Valid() {
			return nil, fmt.Errorf("%w: input %q: unsupported datatype %q (want FP32, FP64, INT32, INT64, BOOL or BYTES)", oip.ErrBadRequest, t.Name, t.Datatype)
		}
		if t.Parameters, err = fromParams(pt.GetParameters(), "input "+strconv.Quote(t.Name)); err != nil {
			return nil, err
		}
		n, err := oip.ShapeElements(t.Shape)
		if err != nil {
			return nil, fmt.Errorf("%w: input %q: %v", oip.ErrBadRequest, t.Name, err)
		}
		if total += n; n > lim.MaxTensorElements || total > lim.MaxTotalElements {
			return nil, fmt.Errorf("%w: input %q: %d elements (%d in all), limits %d per tensor and %d per request", oip.ErrTooLarge, t.Name, n, total, lim.MaxTensorElements, lim.MaxTotalElements)
		}
		if len(raw) > 0 {
			if pt.GetContents() != nil {
				return nil, fmt.Errorf("%w: input %q: contents given together with raw_input_contents", oip.ErrBadRequest, t.Name)
			}
			if err := DecodeRaw(t, raw[i], lim); err != nil {
				return nil, err
			}
			continue
		}
		if err := fromContents(t, pt.GetContents()); err != nil {
			return nil, err
		}
		if got := int64(t.Len()); got != n {
			return nil, fmt.Errorf("%w: input %q: contents have %d elements, shape %v needs %d", oip.ErrBadRequest, t.Name, got, t.Shape, n)
		}
	}
	for _, o := range in.GetOutputs() {
		p, err := fromParams(o.GetParameters(), "output "+strconv.Quote(o.GetName()))
		if err != nil {
			return nil, err
		}
		req.Outputs = append(req.Outputs, oip.RequestedOutput{Name: o.GetName(), Parameters: p})
	}
	return req, nil
}

// fromContents copies the typed contents that match t.Datatype into t; contents of other types
// are an error, so that a mismatch is not silently read as an empty tensor.
func fromContents(t *oip.Tensor, c *pb.InferTensorContents) error {
	if c == nil {
		return nil
	}
	present := 0
	for _, n := range []int{len(c.BoolContents), len(c.IntContents), len(c.Int64Contents), len(c.UintContents),
		len(c.Uint64Contents), len(c.Fp32Contents), len(c.Fp64Contents), len(c.BytesContents)} {
		if n > 0 {
			present++
		}
	}
	if present > 1 {
		return fmt.Errorf("%w: input %q: contents set in more than one typed field", oip.ErrBadRequest, t.Name)
	}
	switch t.Datatype {
	case oip.DatatypeFP32:
		t.FP32 = c.Fp32Contents
	case oip.DatatypeFP64:
		t.FP64 = c.Fp64Contents
	case oip.DatatypeINT32:
		t.INT32 = c.IntContents
	case oip.DatatypeINT64:
		t.INT64 = c.Int64Contents
	case oip.DatatypeBOOL:
		t.BOOL = c.BoolContents
	case oip.DatatypeBYTES:
		t.BYTES = make([]string, len(c.BytesContents))
		for i, b := range c.BytesContents {
			t.BYTES[i] = string(b)
		}
	}
	if present == 1 && t.Len() == 0 {
		return fmt.Errorf("%w: input %q: contents are not in the field for datatype %s", oip.ErrBadRequest, t.Name, t.Datatype)
	}
	return nil
}

// toContents returns t's data as typed contents.
func toContents(t *oip.Tensor) (*pb.InferTensorContents, error) {
	c := &pb.InferTensorContents{}
	switch t.Datatype {
	case oip.DatatypeFP32:
		c.Fp32Contents = t.FP32
	case oip.DatatypeFP64:
		c.Fp64Contents = t.FP64
	case oip.DatatypeINT32:
		c.IntContents = t.INT32
	case oip.DatatypeINT64:
		c.Int64Contents = t.INT64
	case oip.DatatypeBOOL:
		c.BoolContents = t.BOOL
	case oip.DatatypeBYTES:
		c.BytesContents = make([][]byte, len(t.BYTES))
		for i, s := range t.BYTES {
			c.BytesContents[i] = []byte(s)
		}
	default:
		return nil, fmt.Errorf("%w: tensor %q: unsupported datatype %q", oip.ErrInternal, t.Name, t.Datatype)
	}
	return c, nil
}

// EncodeResponse converts an oip response into a gRPC ModelInferResponse. With raw set the
// outputs travel in raw_output_contents (see AppendRaw), otherwise in typed contents. The server
// answers in the form the request used: raw inputs get raw outputs (what Triton's clients read),
// typed inputs get typed outputs.
func EncodeResponse(r *oip.InferenceResponse, raw bool) (*pb.ModelInferResponse, error) {
	out := &pb.ModelInferResponse{
		ModelName:    r.ModelName,
		ModelVersion: r.ModelVersion,
		Id:           r.ID,
		Parameters:   toParams(r.Parameters),
		Outputs:      make([]*pb.ModelInferResponse_InferOutputTensor, len(r.Outputs)),
	}
	if raw {
		out.RawOutputContents = make([][]byte, len(r.Outputs))
	}
	for i := range r.Outputs {
		t := &r.Outputs[i]
		o := &pb.ModelInferResponse_InferOutputTensor{Name: t.Name, Datatype: string(t.Datatype), Shape: t.Shape, Parameters: toParams(t.Parameters)}
		var err error
		if raw {
			out.RawOutputContents[i], err = AppendRaw(nil, t)
		} else {
			o.Contents, err = toContents(t)
		}
		if err != nil {
			return nil, err
		}
		out.Outputs[i] = o
	}
	return out, nil
}

// EncodeRequest converts an oip request for model (version "" = default) into a gRPC
// ModelInferRequest, with the inputs in raw_input_contents when raw is set.
func EncodeRequest(model, version string, r *oip.InferenceRequest, raw bool) (*pb.ModelInferRequest, error) {
	out := &pb.ModelInferRequest{
		ModelName:    model,
		ModelVersion: version,
		Id:           r.ID,
		Parameters:   toParams(r.Parameters),
		Inputs:       make([]*pb.ModelInferRequest_InferInputTensor, len(r.Inputs)),
	}
	if raw {
		out.RawInputContents = make([][]byte, len(r.Inputs))
	}
	for i := range r.Inputs {
		t := &r.Inputs[i]
		in := &pb.ModelInferRequest_InferInputTensor{Name: t.Name, Datatype: string(t.Datatype), Shape: t.Shape, Parameters: toParams(t.Parameters)}
		var err error
		if raw {
			out.RawInputContents[i], err = AppendRaw(nil, t)
		} else {
			in.Contents, err = toContents(t)
		}
		if err != nil {
			return nil, err
		}
		out.Inputs[i] = in
	}
	for _, o := range r.Outputs {
		out.Outputs = append(out.Outputs, &pb.ModelInferRequest_InferRequestedOutputTensor{Name: o.Name, Parameters: toParams(o.Parameters)})
	}
	return out, nil
}

// DecodeResponse converts a gRPC ModelInferResponse into an oip response (raw or typed outputs).
func DecodeResponse(in *pb.ModelInferResponse, lim oip.Limits) (*oip.InferenceResponse, error) {
	outs := in.GetOutputs()
	raw := in.GetRawOutputContents()
	if len(raw) > 0 && len(raw) != len(outs) {
		return nil, fmt.Errorf("%w: raw_output_contents has %d entries for %d outputs", oip.ErrBadRequest, len(raw), len(outs))
	}
	params, err := fromParams(in.GetParameters(), "response")
	if err != nil {
		return nil, err
	}
	r := &oip.InferenceResponse{ModelName: in.GetModelName(), ModelVersion: in.GetModelVersion(), ID: in.GetId(), Parameters: params,
		Outputs: make([]oip.Tensor, len(outs))}
	for i, pt := range outs {
		t := &r.Outputs[i]
		t.Name, t.Datatype, t.Shape = pt.GetName(), oip.Datatype(pt.GetDatatype()), pt.GetShape()
		if !t.Datatype.Valid() {
			return nil, fmt.Errorf("%w: output %q: unsupported datatype %q", oip.ErrBadRequest, t.Name, t.Datatype)
		}
		if t.Parameters, err = fromParams(pt.GetParameters(), "output "+strconv.Quote(t.Name)); err != nil {
			return nil, err
		}
		if len(raw) > 0 {
			if err := DecodeRaw(t, raw[i], lim); err != nil {
				return nil, err
			}
			continue
		}
		if err := fromContents(t, pt.GetContents()); err != nil {
			return nil, err
		}
		n, err := oip.ShapeElements(t.Shape)
		if err != nil || int64(t.Len()) != n {
			return nil, fmt.Errorf("%w: output %q: contents have %d elements for shape %v", oip.ErrBadRequest, t.Name, t.Len(), t.Shape)
		}
	}
	return r, nil
}

// fromParams converts gRPC parameters into oip.Parameters: bool and string as they are, int64 and
// Triton's uint64_param and double_param as json.Number (what the REST decoder yields for
// numbers). A parameter with no value, or a double that is NaN or infinite (JSON has no such
// number), is an error wrapping oip.ErrBadRequest.
func fromParams(in map[string]*pb.InferParameter, where string) (oip.Parameters, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(oip.Parameters, len(in))
	for k, v := range in {
		switch c := v.GetParameterChoice().(type) {
		case *pb.InferParameter_BoolParam:
			out[k] = c.BoolParam
		case *pb.InferParameter_Int64Param:
			out[k] = json.Number(strconv.FormatInt(c.Int64Param, 10))
		case *pb.InferParameter_StringParam:
			out[k] = c.StringParam
		case *pb.InferParameter_Uint64Param:
			out[k] = json.Number(strconv.FormatUint(c.Uint64Param, 10))
		case *pb.InferParameter_DoubleParam:
			if math.IsNaN(c.DoubleParam) || math.IsInf(c.DoubleParam, 0) {
				return nil, fmt.Errorf("%w: %s: parameter %q: double_param %v is not finite", oip.ErrBadRequest, where, k, c.DoubleParam)
			}
			out[k] = json.Number(strconv.FormatFloat(c.DoubleParam, 'g', -1, 64))
		default:
			return nil, fmt.Errorf("%w: %s: parameter %q has no value", oip.ErrBadRequest, where, k)
		}
	}
	return out, nil
}

// toParams converts oip.Parameters into gRPC parameters. KServe's InferParameter holds only
// bool, int64 and string (double_param and uint64_param are Triton's, unknown to KServe clients),
// so an integral number becomes int64_param and any other number (a
// fraction, or an integer beyond int64) becomes its decimal text in string_param; values of other
// types are written with %v.
func toParams(in oip.Parameters) map[string]*pb.InferParameter {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]*pb.InferParameter, len(in))
	for k, v := range in {
		out[k] = toParam(v)
	}
	return out
}

func toParam(v any) *pb.InferParameter {
	str := func(s string) *pb.InferParameter {
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_StringParam{StringParam: s}}
	}
	i64 := func(i int64) *pb.InferParameter {
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_Int64Param{Int64Param: i}}
	}
	float := func(f float64) *pb.InferParameter {
		if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
			return i64(int64(f))
		}
		return str(strconv.FormatFloat(f, 'g', -1, 64))
	}
	switch x := v.(type) {
	case bool:
		return &pb.InferParameter{ParameterChoice: &pb.InferParameter_BoolParam{BoolParam: x}}
	case string:
		return str(x)
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i64(i)
		}
		return str(string(x))
	case int:
		return i64(int64(x))
	case int64:
		return i64(x)
	case int32:
		return i64(int64(x))
	case uint64:
		if x <= math.MaxInt64 {
			return i64(int64(x))
		}
		return str(strconv.FormatUint(x, 10))
	case float64:
		return float(x)
	case float32:
		return float(float64(x))
	}
	return str(fmt.Sprint(v))
}

// toModelMetadata converts oip model metadata into its gRPC form.
func toModelMetadata(md *oip.ModelMetadata) *pb.ModelMetadataResponse {
	conv := func(ts []oip.TensorMetadata) []*pb.ModelMetadataResponse_TensorMetadata {
		out := make([]*pb.ModelMetadataResponse_TensorMetadata, len(ts))
		for i, t := range ts {
			out[i] = &pb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: string(t.Datatype), Shape: t.Shape}
		}
		return out
	}
	return &pb.ModelMetadataResponse{Name: md.Name, Versions: md.Versions, Platform: md.Platform, Inputs: conv(md.Inputs), Outputs: conv(md.Outputs)}
}

// fromModelMetadata converts gRPC model metadata into its oip form.
func fromModelMetadata(md *pb.ModelMetadataResponse) *oip.ModelMetadata {
	conv := func(ts []*pb.ModelMetadataResponse_TensorMetadata) []oip.TensorMetadata {
		out := make([]oip.TensorMetadata, len(ts))
		for i, t := range ts {
			out[i] = oip.TensorMetadata{Name: t.GetName(), Datatype: oip.Datatype(t.GetDatatype()), Shape: t.GetShape()}
		}
		return out
	}
	return &oip.ModelMetadata{Name: md.GetName(), Versions: md.GetVersions(), Platform: md.GetPlatform(), Inputs: conv(md.GetInputs()), Outputs: conv(md.GetOutputs())}
}
