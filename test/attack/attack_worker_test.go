package attack

import (
	"bytes"
	"fmt"
	"io"
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
	g, worker, infer := onlyWorker(t, 500*time.Millisecond)
	if code := infer(); code != http.StatusOK {
		t.Fatalf("before the stop: %d", code)
	}
	stopped := stop(t, worker)
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
	t.Logf("worker %d stopped: the model answers 200 again after %v (new worker %v)", worker, took.Round(10*time.Millisecond), children(g.pid))
	if took > 8*time.Second {
		t.Errorf("recovery took %v, want ≤ 8 s", took)
	}
}

// TestStoppedWorkerReadiness follows readiness through a stopped worker (SIGSTOP) of a model's
// only instance: while the provider's health checks have not yet given up on it, the model and
// the server stay ready (200) and sloserve_instances{state="ready"} stays 1 while inference
// answers 504; once its health checks fail and it is killed, the model is not ready
// (/v2/models/m/ready and /v2/health/ready answer 400, as Triton does with its default strict
// readiness) and sloserve_instances{state="ready"} is 0; once restarted, all are back.
func TestStoppedWorkerReadiness(t *testing.T) {
	g, worker, infer := onlyWorker(t, 2*time.Second)
	c := &http.Client{Timeout: 2 * time.Second}
	get := func(path string) int {
		res, err := c.Get(g.url + path)
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	readyInstances := func() string {
		res, err := c.Get(g.url + "/metrics")
		if err != nil {
			return "?"
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, `sloserve_instances{model="logreg",state="ready"} `); ok {
				return v
			}
		}
		return "absent"
	}
	state := func() string {
		return fmt.Sprintf("model ready %d, server ready %d, instances ready %s", get("/v2/models/logreg/ready"), get("/v2/health/ready"), readyInstances())
	}
	const ready, notReady = "model ready 200, server ready 200, instances ready 1", "model ready 400, server ready 400, instances ready 0"
	if s := state(); s != ready || infer() != http.StatusOK {
		t.Fatalf("before the stop: %s", s)
	}
	stopped := stop(t, worker)
	if code := infer(); code != http.StatusGatewayTimeout {
		t.Errorf("stopped worker: inference answered %d, want 504", code)
	}
	if s := state(); s != ready {
		t.Errorf("stopped worker, %v after the stop (health checks not yet failed): %s, want %s", time.Since(stopped).Round(time.Millisecond), s, ready)
	}
	seen := map[string]time.Duration{}
	for {
		s := state()
		if _, ok := seen[s]; !ok {
			seen[s] = time.Since(stopped)
			t.Logf("%6v after the stop: %s", time.Since(stopped).Round(10*time.Millisecond), s)
		}
		if _, was := seen[notReady]; was && s == ready {
			break
		}
		if time.Since(stopped) > 20*time.Second {
			t.Fatalf("no not-ready then ready within 20 s of the stop; states seen: %v", seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := infer(); code != http.StatusOK {
		t.Errorf("after recovery: inference answered %d", code)
	}
	t.Logf("not ready after %v, ready again after %v", seen[notReady].Round(10*time.Millisecond), time.Since(stopped).Round(10*time.Millisecond))
}

// onlyWorker starts the attack gateway and returns it with the pid of its one worker and a
// function that sends one normal inference request (status, 0 on a transport error) with timeout.
func onlyWorker(t *testing.T, timeout time.Duration) (*gateway, int, func() int) {
	t.Helper()
	g := startGateway(t, needAttack(t), "")
	workers := children(g.pid)
	if len(workers) != 1 {
		t.Fatalf("gateway %d has children %v, want its one worker", g.pid, workers)
	}
	body := g.inferBody()
	c := &http.Client{Timeout: timeout}
	infer := func() int {
		res, err := c.Post(g.url+"/v2/models/logreg/infer", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	return g, workers[0], infer
}

// stop sends SIGSTOP to pid (SIGKILL at the test's end) and returns when.
func stop(t *testing.T, pid int) time.Time {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return time.Now()
}
