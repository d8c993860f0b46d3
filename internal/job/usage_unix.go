//go:build unix

package job

import (
	"os"
	"runtime"
	"syscall"

	"github.com/hivetools/hive/internal/limits"
)

// sigXCPU is the signal of the CPU time rlimit.
const sigXCPU = int(syscall.SIGXCPU)

// rusageOf is what a reaped leader's rusage tells: its CPU time and
// that of the descendants it waited for, and the largest resident set
// of one of them (maxrss).
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
	}
	return u
}
