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
