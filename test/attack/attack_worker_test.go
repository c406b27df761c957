package attack

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// children returns the pids whose parent is pid.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// TestStoppedWorker: the only worker of a model is stopped (SIGSTOP). The provider's health
// checks (1 s timeout, rechecks 250 ms apart, 3 failures, then SIGKILL at once) must restart it,
// so that the model answers again within 8 s (it took ~10 s with 2 s checks and a SIGTERM grace
// a stopped process cannot use).
func TestStoppedWorker(t *testing.T) {
	bin := needAttack(t)
	g := startGateway(t, bin, "")
	workers := children(g.pid)
	if len(workers) != 1 {
		t.Fatalf("gateway %d has children %v, want its one worker", g.pid, workers)
	}
	body := g.inferBody()
	c := &http.Client{Timeout: 500 * time.Millisecond}
	infer := func() int {
		res, err := c.Post(g.url+"/v2/models/logreg/infer", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := infer(); code != http.StatusOK {
		t.Fatalf("before the stop: %d", code)
	}
	if err := syscall.Kill(workers[0], syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(workers[0], syscall.SIGKILL) })
	stopped := time.Now()
	for {
		if code := infer(); code == http.StatusOK {
			break
		}
		if time.Since(stopped) > 20*time.Second {
			t.Fatal("the model did not answer 200 within 20 s of its worker's SIGSTOP")
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(stopped)
	t.Logf("worker %d stopped: the model answers 200 again after %v (new worker %v)", workers[0], took.Round(10*time.Millisecond), children(g.pid))
	if took > 8*time.Second {
		t.Errorf("recovery took %v, want ≤ 8 s", took)
	}
}
