package local

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A provider that dies (a crashed or SIGKILLed controller) must not leak its worker processes.
// Two mechanisms ensure it: each worker is started with Pdeathsig = SIGKILL, so the kernel kills
// it when the provider's process exits; and, when Config.StateDir is set, each running worker is
// recorded in a pidfile "<provider pid>-<worker pid>.pid" holding the worker's command line. A new
// provider (a restarted controller) reaps the files of providers that no longer run: it kills the
// recorded worker's process group when the process still runs the recorded command line (so a
// recycled pid is never killed) and removes the file. The restarted controller then launches its
// own fleet; the old fleet is cleaned up, not adopted, because its workers' addresses and states
// are unknown and relaunching is cheap (~1 s).

// DefaultStateDir returns the state directory `sloserve serve` uses:
// $XDG_RUNTIME_DIR/sloserve/workers, or <tmp>/sloserve-<uid>/workers.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "sloserve", "workers")
	}
	return filepath.Join(os.TempDir(), "sloserve-"+strconv.Itoa(os.Getuid()), "workers")
}

// pidfile returns the path of the pidfile of this provider's worker pid; "" without a state dir.
func (p *Provider) pidfile(pid int) string {
	if p.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(p.cfg.StateDir, strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(pid)+".pid")
}

// record writes the pidfile of a started worker; the error is logged, not fatal.
func (p *Provider) record(pid int, args []string) string {
	path := p.pidfile(pid)
	if path == "" {
		return ""
	}
	if err := os.WriteFile(path, []byte(strings.Join(args, "\x00")), 0o600); err != nil {
		p.log.Warn("record worker pid", "err", err)
		return ""
	}
	return path
}

// Reap kills the workers recorded in dir by providers that no longer run and removes their
// pidfiles; it returns the number of workers killed. New calls it when Config.StateDir is set.
func Reap(dir string, log *slog.Logger) (int, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("local.state_dir %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("local.state_dir %s: %w", dir, err)
	}
	killed := 0
	var errs []error
	for _, e := range entries {
		owner, pid, ok := parsePidfile(e.Name())
		if !ok {
			continue
		}
		if owner == os.Getpid() || processAlive(owner) {
			continue // a running provider's worker (this process's, or another serve's)
		}
		path := filepath.Join(dir, e.Name())
		want, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if got, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil &&
			len(want) > 0 && bytes.Equal(bytes.TrimRight(got, "\x00"), want) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed++
			log.Warn("killed a worker left by a provider that exited", "pid", pid, "provider_pid", owner)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
}

// parsePidfile splits "<owner>-<pid>.pid".
func parsePidfile(name string) (owner, pid int, ok bool) {
	base, found := strings.CutSuffix(name, ".pid")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(base, "-")
	if !found {
		return 0, 0, false
	}
	owner, err1 := strconv.Atoi(a)
	pid, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || owner <= 0 || pid <= 0 {
		return 0, 0, false
	}
	return owner, pid, true
}

// processAlive reports whether a process with pid exists (and is not a zombie).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // not Linux /proc: trust kill(0)
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// PID returns the process id of an instance's current worker process; false when the instance
// is unknown or its worker is not running. Fault injection (internal/chaos) uses it.
func (p *Provider) PID(id string) (int, bool) {
	p.mu.Lock()
	pr, ok := p.insts[id]
	p.mu.Unlock()
	if !ok {
		return 0, false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.pid, pr.pid > 0
}
