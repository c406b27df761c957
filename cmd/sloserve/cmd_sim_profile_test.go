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

// TestSimCPUProfile: `sim --cpuprofile FILE` writes a CPU profile of the run; a file that
// cannot be created is a usage error (exit 2) naming the flag.
func TestSimCPUProfile(t *testing.T) {
	tr := "../../testdata/traces/twitter-2017-05-25-0700-30min.rps.csv"
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	var out, errOut bytes.Buffer
	args := []string{"--trace", tr, "--duration", "2m", "--policy", "fixed", "--json", "--cpuprofile", prof}
	if err := runSim(context.Background(), args, env{stdout: &out, stderr: &errOut}); err != nil {
		t.Fatalf("sim %v: %v\n%s", args, err, errOut.String())
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %v), want a non-empty file", prof, err, fi)
	}
	args = []string{"--trace", tr, "--duration", "2m", "--policy", "fixed", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "p")}
	err := runSim(context.Background(), args, env{stdout: &out, stderr: &errOut})
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("unwritable --cpuprofile: %v, want a usage error naming the flag", err)
	}
}
