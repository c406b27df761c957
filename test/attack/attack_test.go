package attack

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// needAttack skips unless `make attack` runs the suite.
func needAttack(t *testing.T) string {
	t.Helper()
	if os.Getenv("SLOSERVE_ATTACK") != "1" {
		t.Skip("adversarial tests run with SLOSERVE_ATTACK=1 (make attack)")
	}
	bin := os.Getenv("SLOSERVE_BIN")
	if bin == "" {
		t.Skip("SLOSERVE_BIN is not set: build sloserve first (make attack does)")
	}
	return bin
}

// gatewayFiles is the open-files limit the gateway runs with: the usual 20,000 of the issue's
// report, whatever the test process has.
const gatewayFiles = 20000

// raiseFiles raises this process's open-files limit to n (the hard limit too when allowed), for
// the client side of the floods; it returns the limit obtained.
func raiseFiles(t *testing.T, n uint64) uint64 {
	t.Helper()
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		t.Fatal(err)
	}
	want := syscall.Rlimit{Cur: n, Max: max(n, r.Max)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		want = syscall.Rlimit{Cur: r.Max, Max: r.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			t.Fatal(err)
		}
	}
	return want.Cur
}

// gateway is a running `sloserve serve` process.
type gateway struct {
	cmd        *exec.Cmd
	pid        int
	url, grpc  string
	stderr     *bytes.Buffer
	modelInput string
	inputShape []int64
}

// startGateway runs `sloserve serve` with one native logreg worker under an open-files limit
// of gatewayFiles, with gatewayYAML appended to the gateway section of its configuration. Its
// log level is $SLOSERVE_ATTACK_LOG (default warn); its log is shown when the test fails.
func startGateway(t *testing.T, bin, gatewayYAML string) *gateway {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`gateway:
  addr: 127.0.0.1:0
  grpc_addr: 127.0.0.1:0
%s
workers:
  binary: %s
  runtime: native
  state_dir: %s
controller:
  policy: none
models:
  - name: logreg
    instances: 1
    batching: {policy: fixed, max_batch: 16, max_wait: 5ms}
`, gatewayYAML, bin, filepath.Join(dir, "state"))
	path := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	lim := strconv.Itoa(gatewayFiles)
	cmd := exec.Command("prlimit", "--nofile="+lim+":"+lim, "--", bin, "serve", "--config", path, "--log-level", cmp.Or(os.Getenv("SLOSERVE_ATTACK_LOG"), "warn"))
	g := &gateway{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{w: g.stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g.pid = cmd.Process.Pid // prlimit execs the gateway: same process
	t.Cleanup(func() { g.stop(t) })
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "sloserve gateway listening on "); ok {
				g.url, _, _ = strings.Cut(rest, " ")
			}
			if rest, ok := strings.CutPrefix(line, "OIP v2 gRPC on "); ok {
				g.grpc = strings.TrimSpace(rest)
				close(found)
			}
		}
	}()
	select {
	case <-found:
	case <-time.After(90 * time.Second):
		t.Fatalf("gateway did not start within 90 s; stderr:\n%s", g.stderr)
	}
	res, err := http.Get(g.url + "/v2/models/logreg")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var md struct {
		Inputs []struct {
			Name  string  `json:"name"`
			Shape []int64 `json:"shape"`
		} `json:"inputs"`
	}
	if err := json.NewDecoder(res.Body).Decode(&md); err != nil || len(md.Inputs) == 0 {
		t.Fatalf("logreg metadata: %v", err)
	}
	g.modelInput, g.inputShape = md.Inputs[0].Name, md.Inputs[0].Shape
	return g
}

// inferBody is a one-row request of zeros for the model.
func (g *gateway) inferBody() []byte {
	n := int64(1)
	for _, d := range g.inputShape[1:] {
		n *= d
	}
	data := strings.TrimSuffix(strings.Repeat("0,", int(n)), ",")
	return []byte(fmt.Sprintf(`{"inputs":[{"name":%q,"datatype":"FP32","shape":[1,%d],"data":[%s]}]}`, g.modelInput, n, data))
}

func (g *gateway) stop(t *testing.T) {
	g.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		g.cmd.Process.Kill()
		<-done
	}
	if t.Failed() {
		t.Logf("gateway stderr:\n%s", g.stderr)
	}
}

// fds returns the number of descriptors the process holds.
func fds(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// rssMB returns the process's resident set (VmRSS) in MiB.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, _ := strconv.ParseFloat(f[0], 64)
			return kb / 1024
		}
	}
	return -1
}

// fileLimit returns the soft open-files limit of the process.
func fileLimit(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Max open files") {
			f := strings.Fields(line)
			n, _ := strconv.Atoi(f[3])
			return n
		}
	}
	return -1
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
