package job

import (
	"github.com/hivetools/hive/internal/limits"
	"github.com/hivetools/hive/internal/proc"
)

// LiveUsage is a running job's usage so far, with its memory now, read
// from its cgroup (the daemon's own JobCgroups, or the one its holder
// made); the memory now is its leader's resident set where the cgroup
// does not tell it (no memory controller); without a cgroup, the
// leader's alone (its CPU time counted as user time). nil for a job
// that is not running. It reads a few files: call it for an answer
// about one job or a page of them, not on a job's path.
func (j *Job) LiveUsage() *limits.Usage {
	j.mu.Lock()
	running, c, held, id, pid := j.info.State == Running, j.child, j.cgroup, j.info.ID, j.info.Pid
	j.mu.Unlock()
	if !running {
		return nil
	}
	var u limits.Usage
	ok := false
	switch {
	case held != "":
		u, ok = proc.CgroupUsage(held)
	case c != nil:
		u, ok = c.cgroups.Usage(id)
	}
	if !ok {
		// No cgroup: its leader's CPU time (clock ticks of USER_HZ,
		// 100 a second) and resident set, once read, if still its.
		st, ok := proc.Read(pid)
		if pid <= 0 || !ok || j.reaped.Load() {
			return nil
		}
		u = limits.Usage{CPUUserMS: int64(st.CPU) * 10}
	}
	if u.MemoryBytes == 0 && pid > 0 && !j.reaped.Load() {
		if pu, ok := proc.ReadUsage(pid); ok && !j.reaped.Load() { // still its pid after the read
			u.MemoryBytes = pu.RSS
		}
	}
	return &u
}
