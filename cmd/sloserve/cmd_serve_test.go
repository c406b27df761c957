package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRepositoryUsageErrors: a bad model repository setting is a usage error (exit 2)
// naming the flag or field, found before any worker starts.
func TestServeRepositoryUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	k8s := filepath.Join(dir, "k8s.yaml")
	if err := os.WriteFile(k8s, []byte("model_repository: "+dir+"\nprovider: {kind: kubernetes}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing dir", []string{"serve", "--model-repository", filepath.Join(dir, "nope")}, "serve: --model-repository (model_repository) "},
		{"a file", []string{"serve", "--model-repository", file}, "is not a directory"},
		{"kubernetes", []string{"serve", "--config", k8s}, "model_repository: needs provider.kind local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, nil, &stdout, &stderr)
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want a usage error containing %q", tc.args, err, tc.want)
			}
		})
	}
}
