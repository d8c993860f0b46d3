//go:build unix

package job

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proc"
)

// sigXCPU is the signal of the CPU time rlimit.
const sigXCPU = int(syscall.SIGXCPU)

// rusageOf is what a reaped leader's rusage tells: its CPU time and
// that of the descendants it waited for, and the largest resident set
// of one of them (maxrss), when that is known to be theirs.
//
// On Linux a child started with vfork (Go's fork and exec, posix_spawn)
// runs in this process's memory until its exec, and the exec records
// that memory's high-water mark in the child's maxrss: a maxrss up to
// this process's own peak may be this process's (the holder's 20 MiB for
// an `echo`), so it is dropped (0: not known; a cgroup's memory.peak,
// where the controller is on, tells it instead). One above it is the
// job's.
func rusageOf(ps *os.ProcessState) limits.Usage {
	if ps == nil {
		return limits.Usage{}
	}
	u := limits.Usage{CPUUserMS: ps.UserTime().Milliseconds(), CPUSystemMS: ps.SystemTime().Milliseconds()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.MemoryPeakBytes = int64(ru.Maxrss)
		if runtime.GOOS != "darwin" { // darwin's is in bytes, the others' in KiB
			u.MemoryPeakBytes <<= 10
		}
		if runtime.GOOS == "linux" && u.MemoryPeakBytes <= selfPeak() {
			u.MemoryPeakBytes = 0
		}
	}
	return u
}

// selfPeak is this process's largest resident set so far, in bytes (0
// if unknown).
func selfPeak() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss) << 10
}

// childNofile is the soft limit of open files this process's children
// start with (0 if unknown), for the rlimits' wrapper
// (limits.Rlimits.NofileSoft): asked of a shell once, started and
// waited for as jobs are (proc.Start: a subreaper must not take its
// status).
var childNofile = sync.OnceValue(func() uint64 {
	var out bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "ulimit -Sn")
	cmd.Stdout = &out
	if proc.Start(cmd) != nil || proc.Wait(cmd) != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(out.String()), 10, 64) // "unlimited": 0
	return n
})
