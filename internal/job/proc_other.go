//go:build unix && !linux

package job

import (
	"os"
	"syscall"

	"github.com/hivetools/hive/internal/proc"
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

// escapees finds nothing without /proc: only the group is known.
func escapees(id, owner string, since uint64, pgid int) []proc.Pinned { return nil }
