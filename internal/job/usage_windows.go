package job

import (
	"os"

	"github.com/hivetools/hive/internal/limits"
)

// sigXCPU: no such signal here.
const sigXCPU = -1

// rusageOf is a reaped process's CPU time (its memory is not known).
func rusageOf(ps *os.ProcessState) limits.Usage {
	if ps == nil {
		return limits.Usage{}
	}
	return limits.Usage{CPUUserMS: ps.UserTime().Milliseconds(), CPUSystemMS: ps.SystemTime().Milliseconds()}
}

// childNofile: no such limit here.
func childNofile() uint64 { return 0 }
