package gateway

import (
	"fmt"
	"syscall"
)

// fdReserveBase and fdReservePerInstance are the descriptors the connection budget leaves to the
// process for its own files, listeners and worker connections.
const (
	fdReserveBase        = 256
	fdReservePerInstance = 64
)

// RaiseFileLimit raises the process's soft limit of open files (RLIMIT_NOFILE) to its hard limit
// and returns the new soft limit; the gateway sizes its connection budget below it.
func RaiseFileLimit() (uint64, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("get RLIMIT_NOFILE: %w", err)
	}
	if r.Cur < r.Max {
		r.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			return 0, fmt.Errorf("raise RLIMIT_NOFILE to %d: %w", r.Max, err)
		}
	}
	return r.Cur, nil
}

// fileLimit returns the soft limit of open files, 0 when unknown.
func fileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}

// sizeConnBudget returns the connection budget for configured (0: no bound of its own) under the
// descriptor limit fds (0: unknown), keeping the probe reserve and the process's own
// descriptors (instances worker processes) out of it; lowered reports that configured did not fit.
func sizeConnBudget(configured int, fds uint64, instances int) (budget int, lowered bool) {
	if fds == 0 {
		return max(configured, 1), false
	}
	room := int64(fds) - fdReserveBase - int64(fdReservePerInstance*instances) - connProbeReserve
	room = max(room, 16)
	if configured == 0 || int64(configured) > room {
		return int(room), configured != 0
	}
	return configured, false
}
