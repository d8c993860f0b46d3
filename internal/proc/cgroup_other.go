//go:build !linux

package proc

import (
	"errors"
	"os/exec"
	"time"

	"github.com/hivetools/hive/internal/limits"
)

// Cgroup2 finds nothing: cgroups are Linux's.
func Cgroup2() (dir string, writable bool) { return "", false }

// JobCgroups is Linux's: elsewhere there are none.
type JobCgroups struct{}

// OpenJobCgroups fails: cgroups are Linux's.
func OpenJobCgroups(owner string) (*JobCgroups, error) { return nil, errors.New("cgroups are Linux's") }

func (g *JobCgroups) Dir() string                { return "" }
func (g *JobCgroups) Close()                     {}
func (g *JobCgroups) SlotOf(id string) string    { return "" }
func (g *JobCgroups) Lend(n int) []string        { return nil }
func (g *JobCgroups) OnSpares(f func())          {}
func (g *JobCgroups) Adopt(id, path string) bool { return false }
func (g *JobCgroups) Unlend(paths []string)      {}
func (g *JobCgroups) Epoch() int                 { return 0 }
func (g *JobCgroups) Prepare(id string, cmd *exec.Cmd) (func(), error) {
	return nil, errors.New("no cgroups")
}
func (g *JobCgroups) End(id string, grace time.Duration, check bool) int { return 0 }
func (g *JobCgroups) Killed(id string, wait time.Duration) bool          { return false }
func (g *JobCgroups) Controllers() limits.Enforced                       { return nil }
func (g *JobCgroups) SetLimits(id string, l limits.Limits) (limits.Enforced, []string) {
	return nil, nil
}
func (g *JobCgroups) Usage(id string) (limits.Usage, bool) { return limits.Usage{}, false }

// EndUsage finds none.
func (g *JobCgroups) EndUsage(id string, cpu bool) (u limits.Usage, cpuRead, ok bool) {
	return limits.Usage{}, false, false
}

// CgroupUsage finds none.
func CgroupUsage(dir string) (limits.Usage, bool) { return limits.Usage{}, false }

// KillJobCgroups finds none.
func KillJobCgroups(owner string, grace time.Duration, slots ...string) []int {
	return make([]int, len(slots))
}

// LeaveJobCgroup has nothing to leave.
func LeaveJobCgroup() (from, to string, err error) { return "", "", nil }

// EndCgroup is Linux's: there are no cgroups here.
func EndCgroup(dir string, grace time.Duration) int { return 0 }

// EndLeftJobCgroups finds none: cgroups are Linux's.
func EndLeftJobCgroups(owner string, grace time.Duration) {}
