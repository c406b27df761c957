package oip

import (
	"errors"
	"strings"
	"testing"
)

// Data beyond what a shape given before it needs is refused as it is read: a client cannot make
// the decoder buffer up to MaxTensorElements for a tensor that declares a few.
func TestDecodeRefusesDataBeyondShape(t *testing.T) {
	body := []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[1,2,3` + strings.Repeat(",4", 1000) + `]}]}`)
	_, err := DecodeRequest(body, Limits{})
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "more elements than shape [1 2] needs (2)") {
		t.Errorf("DecodeRequest: %v, want ErrBadRequest naming the shape", err)
	}
	if _, err := DecodeRequest([]byte(`{"inputs":[{"name":"x","datatype":"FP32","data":[1,2,3],"shape":[1,2]}]}`), Limits{}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("data before its shape: %v, want ErrBadRequest at the end", err)
	}
}
