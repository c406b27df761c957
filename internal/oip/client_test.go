package oip

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func newTestClient(t *testing.T) (*Client, *fakeCore) {
	t.Helper()
	srv, core := newTestServer(t, HandlerOptions{})
	c, err := NewClient(srv.URL, ClientOptions{})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c, core
}

func TestClientInfer(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	req := &InferenceRequest{ID: "a", Inputs: []Tensor{NewFP32("input", []int64{1, 4}, []float32{0.5, 0, 0, 0})}}
	got, err := c.Infer(ctx, "mlp", "", req)
	if err != nil {
		t.Fatalf("Infer: %v", err)
	}
	want := &InferenceResponse{ModelName: "mlp", ID: "a", ServiceTime: 1234 * time.Microsecond, Outputs: []Tensor{
		NewFP32("probs", []int64{1, 2}, []float32{0.5, 0.5}),
		{Name: "label", Datatype: DatatypeINT64, Shape: []int64{1}, INT64: []int64{0}},
	}}
	assertEqual(t, want, got)
}

func TestClientErrors(t *testing.T) {
	c, _ := newTestClient(t)
	ctx := context.Background()
	good := &InferenceRequest{Inputs: []Tensor{NewFP32("input", []int64{1, 4}, []float32{0, 0, 0, 0})}}
	bad := &InferenceRequest{Inputs: []Tensor{NewFP32("input", []int64{1, 3}, []float32{0, 0, 0})}}
	tests := []struct {
		name       string
		model      string
		req        *InferenceRequest
		want       error
		retryAfter time.Duration
		retryable  bool
	}{
		{"bad request", "mlp", bad, ErrBadRequest, 0, false},
		{"not found", "nope", good, ErrModelNotFound, 0, false},
		{"overloaded", "busy", good, ErrOverloaded, 3 * time.Second, true},
		{"unavailable", "cold", good, ErrUnavailable, time.Second, true},
		{"deadline", "slow", good, ErrDeadline, 0, false},
		{"internal", "broken", good, ErrInternal, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Infer(ctx, tc.model, "", tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Infer error = %v, want one wrapping %v", err, tc.want)
			}
			if ra, _ := RetryAfter(err); ra != tc.retryAfter {
				t.Errorf("RetryAfter (-want +got):\n- %v\n+ %v", tc.retryAfter, ra)
			}
			if got := IsRetryable(err); got != tc.retryable {
				t.Errorf("IsRetryable = %v, want %v", got, tc.retryable)
			}
		})
	}
}

func TestClientMetadata(t *testing.T) {
	c, core := newTestClient(t)
	ctx := context.Background()
	if err := c.Live(ctx); err != nil {
		t.Errorf("Live: %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if err := c.ModelReady(ctx, "mlp", "1"); err != nil {
		t.Errorf("ModelReady: %v", err)
	}
	if err := c.ModelReady(ctx, "cold", ""); !errors.Is(err, ErrUnavailable) {
		t.Errorf("ModelReady(cold) = %v, want ErrUnavailable", err)
	}
	sm, err := c.ServerMetadata(ctx)
	if err != nil || sm.Name != "fake" {
		t.Errorf("ServerMetadata = %+v, %v", sm, err)
	}
	md, err := c.Metadata(ctx, "mlp", "")
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	assertEqual(t, mlpMetadata, md)
	list, err := c.Models(ctx, true)
	if err != nil {
		t.Fatalf("Models: %v", err)
	}
	assertEqual(t, []RepositoryIndexEntry{{Name: "mlp", Version: "1", State: StateReady}}, list)
	core.ready = false
	if err := c.Ready(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ready when not ready = %v, want ErrUnavailable", err)
	}
}

// TestClientConcurrent exercises keep-alive connections from many goroutines (run with -race).
func TestClientConcurrent(t *testing.T) {
	c, _ := newTestClient(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				id := fmt.Sprint(g, "-", i)
				v := float32(i) / 25
				res, err := c.Infer(context.Background(), "mlp", "", &InferenceRequest{ID: id, Inputs: []Tensor{NewFP32("input", []int64{1, 4}, []float32{v, 0, 0, 0})}})
				if err != nil {
					errs <- err
					return
				}
				if res.ID != id || res.Outputs[0].FP32[0] != v {
					errs <- fmt.Errorf("response %+v does not answer %s", res, id)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestNewClientRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:80", "ftp://x", "http://"} {
		if _, err := NewClient(u, ClientOptions{}); err == nil {
			t.Errorf("NewClient(%q) succeeded", u)
		}
	}
}

func TestParseSLO(t *testing.T) {
	tests := []struct {
		name    string
		p       Parameters
		want    RequestSLO
		wantErr bool
	}{
		{"none", nil, RequestSLO{}, false},
		{"timeout us", Parameters{"timeout": "2500"}, RequestSLO{Timeout: 2500 * time.Microsecond}, false},
		{"latency ms and accuracy", Parameters{"latency_ms": 150.5, "accuracy": 0.8}, RequestSLO{Latency: 150500 * time.Microsecond, Accuracy: 0.8}, false},
		{"zero timeout", Parameters{"timeout": 0}, RequestSLO{}, true},
		{"accuracy percent", Parameters{"accuracy": 80}, RequestSLO{}, true},
		{"not a number", Parameters{"latency_ms": true}, RequestSLO{}, true},
		{"huge", Parameters{"timeout": "1e300"}, RequestSLO{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSLO(tc.p)
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrBadRequest)) {
				t.Fatalf("ParseSLO error = %v, want error %v (ErrBadRequest)", err, tc.wantErr)
			}
			if err == nil {
				assertEqual(t, tc.want, got)
			}
		})
	}
	if b := (RequestSLO{Timeout: 3, Latency: 2}).Bound(); b != 2 {
		t.Errorf("Bound = %v, want 2ns", b)
	}
}
