package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's utime and stime (100 on every
// mainstream architecture).
const clockTicks = 100

// procCPU returns the CPU seconds (user + system, all threads) process pid has used, from
// /proc/<pid>/stat; an error where there is no /proc.
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command (which may contain spaces) start after its closing ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 { // state is field 3 of stat, f[0]; utime and stime are fields 14 and 15
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return float64(u+st) / clockTicks, nil
}

// selfCPU returns the CPU seconds this process has used (the load generator's).
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// cpuMeter samples the CPU seconds of the gateways, the workers and this process.
type cpuMeter struct {
	gateways, workers []int
}

// cpuSample is one sample: each gateway's, the workers' summed, and this process's seconds.
type cpuSample struct {
	gateways []float64
	workers  float64
	self     float64
}

func (m cpuMeter) sample() cpuSample {
	s := cpuSample{gateways: make([]float64, len(m.gateways)), self: selfCPU()}
	for i, pid := range m.gateways {
		s.gateways[i], _ = procCPU(pid)
	}
	for _, pid := range m.workers {
		c, _ := procCPU(pid)
		s.workers += c
	}
	return s
}
