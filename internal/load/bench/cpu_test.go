package bench

import (
	"os"
	"testing"
	"time"
)

// procCPU of this process grows by about the CPU time a busy loop burns, and matches getrusage.
func TestProcCPU(t *testing.T) {
	before, err := procCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self0 := selfCPU()
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
	}
	after, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self := selfCPU() - self0
	if d := after - before; d < 0.05 || d > self+0.1 {
		t.Errorf("procCPU grew %.2f s over a 300 ms busy loop (getrusage: %.2f s)", d, self)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("procCPU(-1) succeeded")
	}
}
