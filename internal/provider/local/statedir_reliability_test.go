package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sloserve/sloserve/internal/provider"
)

// A worker recorded by a provider whose process has exited (a crashed controller) is killed by
// the next provider that starts on the same state directory; a recorded pid that now runs some
// other command is left alone; a running provider's workers are recorded and their files removed
// when they stop.
func TestStateDirReapsWorkersOfADeadProvider(t *testing.T) {
	dir := t.TempDir()
	// The "crashed controller": a process that has exited.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	deadPID := dead.Process.Pid
	// Its orphaned worker: the fake worker, in its own process group as the provider starts them.
	orphan := exec.Command(os.Args[0], "worker", "--addr", "127.0.0.1:0", "--models", "m")
	orphan.Env = append(os.Environ(), "FAKE_WORKER=ok")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { orphan.Wait(); close(exited) }()
	t.Cleanup(func() { orphan.Process.Kill() })
	record := func(owner, pid int, args []string) string {
		t.Helper()
		path := filepath.Join(dir, strconv.Itoa(owner)+"-"+strconv.Itoa(pid)+".pid")
		if err := os.WriteFile(path, []byte(strings.Join(args, "\x00")), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	orphanFile := record(deadPID, orphan.Process.Pid, orphan.Args)
	// A recycled pid: this test process, recorded with another command line.
	recycledFile := record(deadPID, os.Getpid(), []string{"/bin/sloserve", "worker"})
	// A live provider's worker (this process owns it): not touched.
	liveFile := record(os.Getpid(), 1, []string{"x"})

	p := newProvider(t, "ok", Config{StateDir: dir})
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphaned worker still runs 10 s after a provider started on its state dir")
	}
	for _, c := range []struct {
		name, path string
		exists     bool
	}{{"orphan", orphanFile, false}, {"recycled pid", recycledFile, false}, {"live provider", liveFile, true}} {
		if _, err := os.Stat(c.path); (err == nil) != c.exists {
			t.Errorf("%s pidfile exists (-want +got): -%v +%v", c.name, c.exists, err == nil)
		}
	}
	os.Remove(liveFile)

	// The new provider records its own worker, and removes the file when it stops.
	ctx := ctxT(t)
	in, err := p.Launch(ctx, provider.Spec{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitReady(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	pid, ok := p.PID(in.ID)
	if !ok {
		t.Fatal("PID of a ready instance: not found")
	}
	own := filepath.Join(dir, strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(pid)+".pid")
	if _, err := os.Stat(own); err != nil {
		t.Errorf("pidfile of a running worker: %v", err)
	}
	if err := p.Terminate(ctx, in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); err == nil {
		t.Errorf("pidfile %s left after the worker stopped", own)
	}
	if _, ok := p.PID(in.ID); ok {
		t.Errorf("PID of a terminated instance: found")
	}
}

func TestParsePidfile(t *testing.T) {
	for _, c := range []struct {
		name       string
		owner, pid int
		ok         bool
	}{{"12-34.pid", 12, 34, true}, {"12-34", 0, 0, false}, {"x-34.pid", 0, 0, false}, {"-1-2.pid", 0, 0, false}, {"0-5.pid", 0, 0, false}} {
		t.Run(c.name, func(t *testing.T) {
			o, p, ok := parsePidfile(c.name)
			if o != c.owner || p != c.pid || ok != c.ok {
				t.Errorf("parsePidfile (-want +got): -%d %d %v +%d %d %v", c.owner, c.pid, c.ok, o, p, ok)
			}
		})
	}
}
