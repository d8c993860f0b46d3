//go:build unix && !linux

package job

import (
	"os"
	"syscall"
	"time"
)

func procStartTime(pid int) uint64 { return 0 }

// groupMembers reports one placeholder member while the group exists: the
// count is not known without /proc.
func groupMembers(pgid int) []int {
	if syscall.Kill(-pgid, 0) == nil {
		return []int{-pgid}
	}
	return nil
}

func tunePipe(f *os.File) {}

// terminateMarked needs /proc; elsewhere only recorded groups are stopped.
func terminateMarked(mark string, grace time.Duration) int { return 0 }
