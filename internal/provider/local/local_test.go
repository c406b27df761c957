package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/cluster"
	"github.com/sloserve/sloserve/internal/provider"
)

// The test binary doubles as a tiny worker: with FAKE_WORKER set, `<test binary> worker --addr A
// --models M [--threads T]` serves /v2/health/ready, answers GET /threads with the --threads
// value it parsed, and prints "listening on http://...". FAKE_WORKER=hang never prints its
// address; FAKE_WORKER=ignore-term ignores SIGTERM; FAKE_WORKER_DELAY=D waits D before listening.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FAKE_WORKER"); mode != "" {
		os.Exit(fakeWorker(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeWorker(mode string, args []string) int {
	if len(args) == 0 || args[0] != "worker" {
		fmt.Fprintln(os.Stderr, "fake worker: want 'worker' subcommand")
		return 2
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	addr := fs.String("addr", "", "")
	models := fs.String("models", "", "")
	threads := fs.Int("threads", 1, "")
	share := fs.String("cpu-share", "", "") // the function tier's duty-cycle share
	if err := fs.Parse(args[1:]); err != nil || *models == "" {
		return 2
	}
	sig := make(chan os.Signal, 1)
	if mode == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sig, syscall.SIGTERM)
	}
	if mode == "hang" {
		select {}
	}
	if d, err := time.ParseDuration(os.Getenv("FAKE_WORKER_DELAY")); err == nil {
		time.Sleep(d) // a slow start (the model load of a cold start)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 1
	}
	fmt.Printf("worker: serving model %s\n", *models)
	fmt.Printf("level=INFO msg=\"listening on http://%s\"\n", ln.Addr())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/health/ready" {
			w.WriteHeader(200)
			return
		}
		if r.URL.Path == "/threads" {
			fmt.Fprint(w, *threads)
			return
		}
		if r.URL.Path == "/cpu-share" {
			fmt.Fprint(w, *share)
			return
		}
		if r.URL.Path == "/sleep" {
			time.Sleep(30 * time.Millisecond) // an invocation's work
			return
		}
		w.WriteHeader(404)
	})}
	go srv.Serve(ln)
	<-sig
	srv.Close()
	return 0
}

func newProvider(t *testing.T, mode string, cfg Config) *Provider {
	t.Helper()
	cfg.Binary = os.Args[0]
	cfg.Env = append(cfg.Env, "FAKE_WORKER="+mode)
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = 20 * time.Millisecond
	}
	if cfg.RestartBackoff == 0 {
		cfg.RestartBackoff = 10 * time.Millisecond
	}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// alive reports whether a process with this pid exists (and is not a zombie we own).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func (p *Provider) pidOf(id string) int {
	p.mu.Lock()
	pr := p.insts[id]
	p.mu.Unlock()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.pid
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLaunchReadyTerminate(t *testing.T) {
	p := newProvider(t, "ok", Config{})
	ctx := ctxT(t)
	select {
	case <-p.ReadyEvents():
		t.Error("a ready event before any launch")
	default:
	}
	var ids []string
	for range 2 {
		in, err := p.Launch(ctx, provider.Spec{Model: "mlp32"})
		if err != nil {
			t.Fatal(err)
		}
		if in.State != provider.StateLaunching {
			t.Errorf("Launch state (-want +got): -%s +%s", provider.StateLaunching, in.State)
		}
		ids = append(ids, in.ID)
	}
	var pids []int
	for _, id := range ids {
		in, err := p.WaitReady(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(in.Addr + "/v2/health/ready")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("ready worker %s at %s does not answer: %v", id, in.Addr, err)
		}
		resp.Body.Close()
		pids = append(pids, p.pidOf(id))
	}
	// The gateway adds a ready instance on this event (provider.ReadyNotifier), not at its next sync.
	select {
	case <-p.ReadyEvents():
	case <-time.After(5 * time.Second):
		t.Error("no ready event within 5 s of the workers being ready")
	}
	insts, _ := p.Instances(ctx)
	got := []string{}
	for _, in := range insts {
		got = append(got, in.ID+":"+string(in.State))
	}
	sort.Strings(got)
	if want := []string{"mlp32-1:ready", "mlp32-2:ready"}; fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("Instances (-want +got):\n- %v\n+ %v", want, got)
	}
	if err := p.Terminate(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if alive(pids[0]) {
		t.Errorf("terminated worker %d still runs", pids[0])
	}
	if err := p.Terminate(ctx, ids[0]); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("second Terminate: got %v, want ErrNotFound", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pids[1]) {
		t.Errorf("worker %d still runs after Close", pids[1])
	}
	if _, err := p.Launch(ctx, provider.Spec{Model: "m"}); err == nil {
		t.Error("Launch after Close: got nil error")
	}
}

func TestRestartsCrashedWorker(t *testing.T) {
	p := newProvider(t, "ok", Config{})
	ctx := ctxT(t)
	in, _ := p.Launch(ctx, provider.Spec{Model: "m"})
	first, err := p.WaitReady(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.pidOf(in.ID)
	syscall.Kill(pid, syscall.SIGKILL)
	// The supervisor notices, relaunches, and the instance is ready again on a new address.
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if p.pidOf(in.ID) != pid {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	second, err := p.WaitReady(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if second.Addr == first.Addr && p.pidOf(in.ID) == pid {
		t.Errorf("worker was not restarted: addr %s pid %d", second.Addr, pid)
	}
	p.mu.Lock()
	restarts := p.insts[in.ID].restarts
	p.mu.Unlock()
	if restarts != 1 {
		t.Errorf("restarts (-want +got): -1 +%d", restarts)
	}
	newPid := p.pidOf(in.ID)
	p.Close()
	if alive(newPid) {
		t.Errorf("restarted worker %d survives Close", newPid)
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	p := newProvider(t, "ignore-term", Config{StopTimeout: 100 * time.Millisecond})
	ctx := ctxT(t)
	in, _ := p.Launch(ctx, provider.Spec{Model: "m"})
	if _, err := p.WaitReady(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	pid := p.pidOf(in.ID)
	if err := p.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("worker ignoring SIGTERM still runs after Terminate")
	}
}

func TestStartTimeoutKillsHungWorker(t *testing.T) {
	p := newProvider(t, "hang", Config{StartTimeout: 200 * time.Millisecond, StopTimeout: 50 * time.Millisecond, RestartBackoff: time.Hour})
	ctx := ctxT(t)
	in, _ := p.Launch(ctx, provider.Spec{Model: "m"})
	var pid int
	for pid == 0 {
		time.Sleep(5 * time.Millisecond)
		pid = p.pidOf(in.ID)
	}
	wctx, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancel()
	if _, err := p.WaitReady(wctx, in.ID); err == nil {
		t.Fatal("WaitReady of a hung worker: got nil error")
	}
	if alive(pid) {
		t.Errorf("hung worker %d not killed after the start timeout", pid)
	}
	if err := p.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative start timeout", Config{StartTimeout: -1}, "local.start_timeout: must be ≥ 0, got -1ns"},
		{"negative failures", Config{HealthFailures: -2}, "local.health_failures: must be ≥ 0, got -2"},
		{"zero server", Config{Servers: []cluster.Resources{{CPU: 4}, {}}}, "local.servers[1]: must be non-negative and non-zero, got cpu 0 gpu 0"},
		{"negative server", Config{Servers: []cluster.Resources{{CPU: 4}, {CPU: 4}, {CPU: 4}, {CPU: 8, GPU: -1}}}, "local.servers[3]: must be non-negative and non-zero, got cpu 8 gpu -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || err.Error() != tc.want {
				t.Errorf("Validate (-want +got):\n- %s\n+ %v", tc.want, err)
			}
		})
	}
}
