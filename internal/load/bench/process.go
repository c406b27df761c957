package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// GatewayProcess is a `sloserve serve` process: a gateway replica on loopback.
type GatewayProcess struct {
	// URL is the gateway's base URL, as it printed it.
	URL string
	cmd *exec.Cmd
	// exited is closed once the process has exited; err is then its Wait error.
	exited chan struct{}
	err    error
}

// listeningPrefix starts the line `sloserve serve` prints once it serves.
const listeningPrefix = "sloserve gateway listening on "

// StartGateway runs `binary serve args...` (binary "" means this executable) with env added to
// the environment and waits, within timeout, until it prints the URL it serves. The process
// dies with this one (Pdeathsig). Its stderr goes to stderr (nil discards it).
func StartGateway(ctx context.Context, binary string, args, env []string, stderr io.Writer, timeout time.Duration) (*GatewayProcess, error) {
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("start gateway: %w", err)
		}
		binary = exe
	}
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start gateway: %w", err)
	}
	g := &GatewayProcess{cmd: cmd, exited: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), listeningPrefix); ok {
				u, _, _ := strings.Cut(rest, " ")
				select {
				case urls <- u:
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
		g.err = cmd.Wait()
		close(g.exited)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case g.URL = <-urls:
		return g, nil
	case <-g.exited:
		return nil, fmt.Errorf("start gateway: exited before serving: %v", g.err)
	case <-t.C:
	case <-ctx.Done():
	}
	g.Kill()
	return nil, fmt.Errorf("start gateway: not serving within %v", timeout)
}

// PID is the process id.
func (g *GatewayProcess) PID() int { return g.cmd.Process.Pid }

// Terminate sends SIGTERM (a graceful shutdown) and waits up to wait for the process to exit;
// it kills it after that and returns an error saying so.
func (g *GatewayProcess) Terminate(wait time.Duration) error {
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("terminate gateway %d: %w", g.PID(), err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-g.exited:
		return g.err
	case <-t.C:
		g.Kill()
		return fmt.Errorf("terminate gateway %d: still running %v after SIGTERM; killed", g.PID(), wait)
	}
}

// Kill kills the process and waits for it.
func (g *GatewayProcess) Kill() {
	g.cmd.Process.Kill()
	<-g.exited
}

// Exited is closed once the process has exited.
func (g *GatewayProcess) Exited() <-chan struct{} { return g.exited }
