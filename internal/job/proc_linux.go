package job

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/proc"
)

// procStartTime is the process's start time in clock ticks after boot, or
// 0 if it is gone.
func procStartTime(pid int) uint64 {
	st, ok := proc.Read(pid)
	if !ok {
		return 0
	}
	return st.Start
}

// groupMembers lists the live processes of group pgid.
func groupMembers(pgid int) []int {
	return pids(proc.Live(func(s proc.Stat) bool { return s.Pgrp == pgid }))
}

func pids(sts []proc.Stat) []int {
	out := make([]int, len(sts))
	for i, s := range sts {
		out[i] = s.Pid
	}
	return out
}

// tunePipe enlarges a pipe to 1 MiB so a fast writer blocks less often.
// It goes through SyscallConn: f.Fd() would put the file in blocking mode
// and take it out of the poller (no more read deadlines).
func tunePipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
}

// escapees pins the live processes outside group pgid that provably
// belong to job id of owner: the job's marks in their environment
// (HIVE_JOB_ID=id, HIVE_JOB_OWNER=owner, as getenv reads them), this
// process's uid, and a start no earlier than the job's leader (since, in
// clock ticks after boot). Each is checked again once pinned, so the
// pidfd signals the process that was checked. Nothing else is touched.
func escapees(id, owner string, since uint64, pgid int) []proc.Pinned {
	self, uid := os.Getpid(), os.Geteuid()
	var out []proc.Pinned
	for _, st := range proc.Live(func(s proc.Stat) bool { return s.Pid != self && s.Pgrp != pgid && s.Start >= since }) {
		start := st.Start
		p, ok := proc.Pin(st.Pid, func(s proc.Stat) bool {
			if s.Start != start {
				return false
			}
			if u, ok := proc.UID(s.Pid); !ok || u != uid {
				return false
			}
			v, ok := proc.Getenv(s.Pid, EnvJobID)
			if !ok || v != id {
				return false
			}
			o, ok := proc.Getenv(s.Pid, EnvJobOwner)
			return ok && o == owner
		})
		if ok {
			out = append(out, p)
		}
	}
	return out
}
