package job

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// procStat is what hive reads of /proc/PID/stat.
type procStat struct {
	pid   int
	state byte
	pgrp  int
	start uint64 // clock ticks after boot
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return procStat{}, false
	}
	f := strings.Fields(s[i+2:])
	// f[0] is field 3 (state); pgrp is field 5, starttime field 22.
	if len(f) < 20 {
		return procStat{}, false
	}
	pgrp, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procStat{pid: pid, state: f[0][0], pgrp: pgrp, start: start}, true
}

// procStartTime is the process's start time in clock ticks after boot, or
// 0 if it is gone.
func procStartTime(pid int) uint64 {
	st, ok := readStat(pid)
	if !ok {
		return 0
	}
	return st.start
}

// allProcs lists live (non-zombie) processes.
func allProcs() []procStat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []procStat
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.state == 'Z' || st.state == 'X' {
			continue
		}
		out = append(out, st)
	}
	return out
}

// groupMembers lists the live processes of group pgid.
func groupMembers(pgid int) []int {
	var out []int
	for _, p := range allProcs() {
		if p.pgrp == pgid {
			out = append(out, p.pid)
		}
	}
	return out
}

// groupMembersSince lists live processes of group pgid started at or after
// start (the leader's recorded start time).
func groupMembersSince(pgid int, start uint64) []int {
	var out []int
	for _, p := range allProcs() {
		if p.pgrp == pgid && p.start >= start {
			out = append(out, p.pid)
		}
	}
	return out
}

// tunePipe enlarges a pipe to 1 MiB so a fast writer blocks less often.
func tunePipe(f *os.File) {
	unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, 1<<20)
}

// terminateMarked terminates every process whose environment holds the
// line mark: SIGTERM, up to grace, then SIGKILL. It returns how many it
// found. Processes of other users cannot be read and are skipped.
func terminateMarked(mark string, grace time.Duration) int {
	find := func() []int {
		var out []int
		self := os.Getpid()
		for _, p := range allProcs() {
			if p.pid == self {
				continue
			}
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
			if err != nil {
				continue
			}
			for _, kv := range bytes.Split(b, []byte{0}) {
				if string(kv) == mark {
					out = append(out, p.pid)
					break
				}
			}
		}
		return out
	}
	found := find()
	for _, p := range found {
		unix.Kill(p, unix.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(find()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range find() {
		unix.Kill(p, unix.SIGKILL)
	}
	return len(found)
}
