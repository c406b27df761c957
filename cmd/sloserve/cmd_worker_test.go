package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sloserve/sloserve/internal/oip"
)

func TestWorkerUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"bad runtime", []string{"worker", "--runtime", "tpu"}},
		{"unknown model", []string{"worker", "--models", "resnet"}},
		{"repeated model", []string{"worker", "--models", "logreg,logreg"}},
		{"bad addr", []string{"worker", "--addr", "localhost"}},
		{"missing model dir", []string{"worker", "--model-dir", "/nonexistent/dir"}},
		{"bad log level", []string{"worker", "--log-level", "loud"}},
		{"zero shutdown timeout", []string{"worker", "--shutdown-timeout", "0s"}},
		{"stray argument", []string{"worker", "extra"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, nil, &out, &errOut)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Errorf("run(%v) error = %v, want a usage error (exit status 2)", tc.args, err)
			}
		})
	}
}

// TestWorkerServes starts `sloserve worker` on a free loopback port, reads the "listening on"
// line the local provider parses, checks readiness and one inference, then stops it.
func TestWorkerServes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"worker", "--models", "logreg", "--log-level", "warn"}, nil, pw, io.Discard)
		pw.CloseWithError(err)
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first stdout line: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first stdout line = %q, want \"listening on http://127.0.0.1:PORT\"", line)
	}
	go io.Copy(io.Discard, pr)
	c, err := oip.NewClient(url, oip.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	resp, err := c.Infer(ctx, "logreg", "", &oip.InferenceRequest{Inputs: []oip.Tensor{oip.NewFP32("input", []int64{1, 784}, make([]float32, 784))}})
	if err != nil {
		t.Fatalf("Infer: %v", err)
	}
	if p := resp.Output("probs"); p == nil || len(p.FP32) != 10 {
		t.Errorf("response outputs = %+v, want probs with 10 values", resp.Outputs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("worker returned %v after cancel, want nil", err)
	}
}
