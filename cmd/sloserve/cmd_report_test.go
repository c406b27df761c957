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

func TestReportUsageErrors(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"no --from", []string{"report"}},
		{"missing dir", []string{"report", "--from", filepath.Join(empty, "nope")}},
		{"no summaries", []string{"report", "--from", empty}},
		{"bad width", []string{"report", "--from", "../../internal/report/testdata/run", "--width", "0"}},
		{"extra argument", []string{"report", "--from", "../../internal/report/testdata/run", "x"}},
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

func TestReportWritesFiles(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"report", "--from", "../../internal/report/testdata/run", "--out", out, "--width", "4", "--height", "3"}
	if err := run(context.Background(), args, nil, &stdout, &stderr); err != nil {
		t.Fatalf("run(%v): %v", args, err)
	}
	lines := strings.Fields(stdout.String())
	if len(lines) != 11 || !strings.HasSuffix(lines[10], "report.html") {
		t.Fatalf("printed %q, want 10 figure files and report.html", lines)
	}
	for _, f := range lines {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v (size %v)", f, err, st)
		}
	}
}
