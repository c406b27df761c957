package app

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/models"
	"github.com/sloserve/sloserve/internal/oip"
	"github.com/sloserve/sloserve/internal/worker"
)

// The test binary doubles as a real worker of a model repository: with GATEWAY_REPO_WORKER=1,
// `<test binary> worker --addr A --models m@1.1 --model-dir STAGE` loads STAGE/m@1.1.onnx (a
// link to the repository's model file) on the native runtime and serves it like
// `sloserve worker`.
func init() {
	if os.Getenv("GATEWAY_REPO_WORKER") == "1" {
		os.Exit(repoWorkerMain(os.Args[1:]))
	}
}

func repoWorkerMain(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "")
	names := fs.String("models", "", "")
	dir := fs.String("model-dir", "", "")
	fs.String("runtime", "", "")
	if len(args) == 0 || fs.Parse(args[1:]) != nil {
		return 2
	}
	ms, err := worker.Load(nil, worker.LoadConfig{Dir: *dir, Names: strings.Split(*names, ","), Options: models.Options{Runtime: models.RuntimeNative}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := worker.New(worker.DefaultConfig(), ms, worker.Deps{})
	if err != nil {
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 1
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := w.Serve(ctx, ln); err != nil {
		return 1
	}
	return 0
}

// writeRepo lays out a model repository: files maps a path under dir to a bundled model file
// to copy ("logreg.onnx") or, for config.yaml, its text.
func writeRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, src := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(src)
		if strings.HasSuffix(src, ".onnx") {
			var err error
			if data, err = os.ReadFile(filepath.Join("..", "..", "models", src)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func repoStack(t *testing.T, dir string) *Stack {
	t.Helper()
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	cfg := localStackConfig()
	cfg.ModelRepository = dir
	cfg.RepositoryPoll = 100 * time.Millisecond
	cfg.Workers.StateDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := Start(ctx, cfg, StackOptions{Env: []string{"GATEWAY_REPO_WORKER=1"}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// logregBody is one row of logreg's 784 inputs.
var logregBody = func() []byte {
	b, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{"name": "input", "datatype": "FP32", "shape": []int{1, 784},
		"data": slices.Repeat([]float32{0.1}, 784)}}})
	return b
}()

// reply is one request's outcome: status (0: no HTTP answer) and the answer's model version.
type reply struct {
	code    int
	version string
}

func send(c *http.Client, method, url string, body []byte) reply {
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		return reply{}
	}
	defer resp.Body.Close()
	var r struct {
		Version string `json:"model_version"`
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &r)
	return reply{resp.StatusCode, r.Version}
}

// traffic sends requests to url from n clients until stop is closed, and returns their answers.
func traffic(url string, n int, stop <-chan struct{}) func() []reply {
	var mu sync.Mutex
	var out []reply
	var wg sync.WaitGroup
	c := &http.Client{Timeout: 20 * time.Second}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := send(c, "POST", url, logregBody)
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		}()
	}
	return func() []reply { wg.Wait(); return out }
}

func statusCounts(as []reply) map[int]int {
	m := map[int]int{}
	for _, a := range as {
		m[a.code]++
	}
	return m
}

// TestRepositoryVersionsLoadReloadUnload serves a repository with real workers and changes it
// under traffic: reloads (by request, by a changed config.yaml, by a new version on SIGHUP's
// Reload) answer every request; an unload answers every request 200 or 404, nothing lost.
func TestRepositoryVersionsLoadReloadUnload(t *testing.T) {
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{
		"m/1/model.onnx": "logreg.onnx", "m/2/model.onnx": "logreg.onnx",
		"m/config.yaml":        "slo: {threshold_ms: 5000, target: 0.99}\n",
		"broken/one/x.onnx":    "logreg.onnx",
		"badconf/1/model.onnx": "logreg.onnx", "badconf/config.yaml": "slo: {threshold_ms: 0}\n",
	})
	st := repoStack(t, dir)
	c := &http.Client{Timeout: 10 * time.Second}
	u := st.URL

	for _, tc := range []struct {
		name, method, path string
		want               reply
	}{
		{"default is the highest", "POST", "/v2/models/m/infer", reply{200, "2"}},
		{"version 1", "POST", "/v2/models/m/versions/1/infer", reply{200, "1"}},
		{"unknown version", "POST", "/v2/models/m/versions/3/infer", reply{404, ""}},
		{"version 3 ready", "GET", "/v2/models/m/versions/3/ready", reply{404, ""}},
		{"version 1 ready", "GET", "/v2/models/m/versions/1/ready", reply{200, ""}},
		{"internal name hidden", "POST", "/v2/models/m@2.1/infer", reply{404, ""}},
		{"broken model", "POST", "/v2/models/broken/infer", reply{404, ""}},
		{"server ready", "GET", "/v2/health/ready", reply{200, ""}},
	} {
		if got := send(c, tc.method, u+tc.path, logregBody); got != tc.want {
			t.Errorf("%s: %s %s = %+v, want %+v", tc.name, tc.method, tc.path, got, tc.want)
		}
	}
	var md oip.ModelMetadata
	if resp, err := c.Get(u + "/v2/models/m"); err == nil {
		json.NewDecoder(resp.Body).Decode(&md)
		resp.Body.Close()
	}
	if md.Name != "m" || !slices.Equal(md.Versions, []string{"1", "2"}) {
		t.Errorf("metadata = %s %v, want m [1 2]", md.Name, md.Versions)
	}
	idx := index(t, u)
	for _, want := range []string{"badconf  UNAVAILABLE " + filepath.Join(dir, "badconf", "config.yaml") + ": model.slo.threshold_ms: must be > 0, got 0",
		"broken  UNAVAILABLE " + filepath.Join(dir, "broken", "one") + `: version directory "one" is not a positive integer`,
		"m 1 READY ", "m 2 READY "} {
		if !slices.Contains(idx, want) {
			t.Errorf("index %q lacks %q", idx, want)
		}
	}

	stop := make(chan struct{})
	done := traffic(u+"/v2/models/m/infer", 4, stop)
	var notReady atomic.Int64 // GET /v2/health/ready answers other than 200 during the reloads
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if a := send(c, "GET", u+"/v2/health/ready", nil); a.code != 200 {
				notReady.Add(1)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	// A reload on request: a new generation, the old one retired once its requests are answered.
	if a := send(c, "POST", u+"/v2/repository/models/m/load", nil); a.code != 200 {
		t.Errorf("load (reload) = %d", a.code)
	}
	// A changed config.yaml, picked up by the poll.
	writeRepo(t, dir, map[string]string{"m/config.yaml": "slo: {threshold_ms: 4000, target: 0.99}\n"})
	waitUntil(t, "the poll reloads m", func() bool { return generation(st, "m") >= 3 })
	// A new version, picked up by Reload (SIGHUP): it becomes the default.
	writeRepo(t, dir, map[string]string{"m/3/model.onnx": "logreg.onnx"})
	st.Reload()
	waitUntil(t, "version 3 serves", func() bool { return send(c, "POST", u+"/v2/models/m/versions/3/infer", logregBody).code == 200 })
	// A broken config.yaml: the reload fails, the loaded generation keeps serving.
	gen := generation(st, "m")
	writeRepo(t, dir, map[string]string{"m/config.yaml": "slo: {threshold_ms: -4}\n"})
	time.Sleep(300 * time.Millisecond)
	if g := generation(st, "m"); g != gen {
		t.Errorf("a broken config.yaml replaced generation %d by %d", gen, g)
	}
	writeRepo(t, dir, map[string]string{"m/config.yaml": "slo: {threshold_ms: 4000, target: 0.99}\n"})
	waitUntil(t, "the mended config.yaml reloads m", func() bool { return generation(st, "m") > gen })
	close(stop)
	as := done()
	if got := statusCounts(as); len(got) != 1 || got[200] == 0 {
		t.Errorf("answers during the reloads: %v, want only 200", got)
	}
	if last := as[len(as)-1]; last.version != "3" {
		t.Errorf("last answer from version %q, want the new default 3", last.version)
	}
	<-probed
	if n := notReady.Load(); n > 0 {
		t.Errorf("/v2/health/ready was not ready %d times during the reloads", n)
	}
	t.Logf("%d requests answered 200 through 4 reloads and a failed one", len(as))

	// Unload under traffic: each request is answered 200 (before) or 404 (after), none lost.
	stop = make(chan struct{})
	done = traffic(u+"/v2/models/m/infer", 4, stop)
	time.Sleep(200 * time.Millisecond)
	if a := send(c, "POST", u+"/v2/repository/models/m/unload", nil); a.code != 200 {
		t.Errorf("unload = %d", a.code)
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	got := statusCounts(done())
	if got[200] == 0 || got[404] == 0 || len(got) != 2 {
		t.Errorf("answers during the unload: %v, want 200 then 404 only", got)
	}
	// The generations replaced by the reloads retire in the background; the unloaded one is gone.
	waitUntil(t, "every generation retired", func() bool { return len(st.Gateway.ModelNames()) == 0 })
	// The poll leaves an unloaded model alone; a load brings it back; removing it from disk
	// unloads it.
	time.Sleep(300 * time.Millisecond)
	if a := send(c, "POST", u+"/v2/models/m/infer", logregBody); a.code != 404 {
		t.Errorf("after unload and a poll: %d, want 404", a.code)
	}
	if a := send(c, "POST", u+"/v2/repository/models/m/load", nil); a.code != 200 {
		t.Errorf("load = %d", a.code)
	}
	if a := send(c, "POST", u+"/v2/models/m/infer", logregBody); a != (reply{200, "3"}) {
		t.Errorf("after load: %+v", a)
	}
	if err := os.RemoveAll(filepath.Join(dir, "m")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "m unloaded once removed", func() bool { return send(c, "POST", u+"/v2/models/m/infer", logregBody).code == 404 })
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/v2/repository/models/nope/load", 404}, {"/v2/repository/models/broken/load", 400}, {"/v2/repository/models/nope/unload", 404},
		{"/v2/repository/models/..%2Fetc/load", 404},
	} {
		if a := send(c, "POST", u+tc.path, nil); a.code != tc.code {
			t.Errorf("POST %s = %d, want %d", tc.path, a.code, tc.code)
		}
	}
	waitUntil(t, "the retired workers stop", func() bool {
		insts, _ := st.Provider.Instances(context.Background())
		live := 0
		for _, in := range insts {
			if in.State != "terminated" {
				live++
			}
		}
		return live == 0
	})
}

// generation returns the generation of model's published default version (0: not loaded).
func generation(st *Stack, model string) int {
	key := st.Gateway.ServedKey(model)
	if key == "" {
		return 0
	}
	var v, g int
	fmt.Sscanf(strings.TrimPrefix(key, model+"@"), "%d.%d", &v, &g)
	return g
}

// index returns POST /v2/repository/index as "name version state reason" lines.
func index(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Post(url+"/v2/repository/index", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var es []oip.RepositoryIndexEntry
	if err := json.NewDecoder(resp.Body).Decode(&es); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, strings.Join([]string{e.Name, e.Version, e.State, e.Reason}, " "))
	}
	return out
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testLogger logs to stderr with GATEWAY_TEST_LOG=1, else discards.
func testLogger() *slog.Logger {
	if os.Getenv("GATEWAY_TEST_LOG") != "1" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}
