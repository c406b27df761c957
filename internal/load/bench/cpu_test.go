package bench

import (
	"os"
	"testing"
	"time"
)

// procCPU of this process grows by about the CPU time a busy loop burns, and matches getrusage.
// The loop runs until getrusage counts 0.2 s of CPU (at most 20 s of wall time), so a loaded
// machine that gives the loop little CPU does not make the comparison meaningless.
func TestProcCPU(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self0 := selfCPU()
	for start := time.Now(); selfCPU()-self0 < 0.2 && time.Since(start) < 20*time.Second; {
		for i := 0; i < 1e6; i++ {
		}
	}
	after, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self := selfCPU() - self0
	if d := after - before; d < self-0.05 || d > self+0.1 {
		t.Errorf("procCPU grew %.2f s over a busy loop that getrusage counts as %.2f s", d, self)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("procCPU(-1) succeeded")
	}
}
