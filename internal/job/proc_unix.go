//go:build unix

package job

import (
	"os"
	"syscall"
	"time"

	"github.com/hivetools/hive/internal/output"
	"github.com/hivetools/hive/internal/proc"
)

var (
	sigInt  = syscall.SIGINT
	sigKill = syscall.SIGKILL
)

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		syscall.Kill(-pgid, sig)
	}
}

// exitStatus is the exit code as bash reports it: 128+n after signal n.
func exitStatus(ps *os.ProcessState) (int, *int) {
	if ps == nil {
		return -1, nil
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		n := int(ws.Signal())
		return 128 + n, &n
	}
	return ps.ExitCode(), nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	if fi.Mode()&0o111 == 0 {
		return os.ErrPermission
	}
	return nil
}

func candidates(p string) []string { return []string{p} }

// cleanupGroup terminates what is left in group pgid after its leader
// exited: SIGTERM, up to grace, then SIGKILL. It returns how many
// processes were left.
func cleanupGroup(pgid int, grace time.Duration) int {
	if syscall.Kill(-pgid, 0) == syscall.ESRCH {
		return 0 // the group is gone: no need to scan the process table
	}
	left := groupMembers(pgid)
	if len(left) == 0 {
		return 0
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	if !waitGroupGone(pgid, grace) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		waitGroupGone(pgid, time.Second)
	}
	return len(left)
}

// waitGroupGone polls until no live process is in group pgid. The members
// are not our children (their parent was the leader), so there is nothing
// to wait on but the process table.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if syscall.Kill(-pgid, 0) == syscall.ESRCH || len(groupMembers(pgid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// terminateOrphanGroup stops what is left of a job recorded by a daemon
// that died, signalling only processes proven to be the job's: the group
// leader by its pid and recorded start time, every other process by the
// job's mark in its environment (HIVE_JOB_ID=id and HIVE_JOB_OWNER=owner).
// Membership of the group alone proves nothing once the leader is gone:
// the group id may then belong to an unrelated process that reused the
// number. It returns how many processes it terminated.
func terminateOrphanGroup(pid int, start uint64, id, owner string, grace time.Duration) int {
	var targets []proc.Pinned
	if start != 0 {
		if p, ok := proc.Pin(pid, func(s proc.Stat) bool { return s.Start == start }); ok {
			targets = append(targets, p)
			// While the proven leader lives, its group id is its own: the
			// group's members are the job's.
			var members []proc.Pinned
			for _, st := range proc.Live(func(s proc.Stat) bool { return s.Pgrp == pid && s.Pid != pid }) {
				if m, ok := proc.Pin(st.Pid, func(s proc.Stat) bool { return s.Pgrp == pid }); ok {
					members = append(members, m)
				}
			}
			// The members count only if the leader still held its pid
			// (its start time) after they were read.
			if st, ok := proc.Read(pid); ok && st.Start == start {
				targets = append(targets, members...)
			} else {
				for _, m := range members {
					m.Close()
				}
			}
		}
	}
	seen := map[int]bool{}
	for _, t := range targets {
		seen[t.Pid] = true
	}
	if owner != "" {
		idMark, ownerMark := EnvJobID+"="+id, EnvJobOwner+"="+owner
		for _, st := range proc.Live(func(s proc.Stat) bool { return !seen[s.Pid] && s.Pid != os.Getpid() }) {
			if p, ok := proc.Pin(st.Pid, func(proc.Stat) bool {
				return proc.HasEnv(st.Pid, idMark) && proc.HasEnv(st.Pid, ownerMark)
			}); ok {
				targets = append(targets, p)
			}
		}
	}
	if len(targets) == 0 {
		return 0
	}
	return proc.Terminate(targets, grace)
}

// drainNow reads what the pipe r holds right now, without waiting for more.
func drainNow(r *os.File, s *output.Stream, buf []byte) {
	r.SetReadDeadline(time.Time{})
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool {
		for {
			n, err := syscall.Read(int(fd), buf)
			if n > 0 {
				s.Write(buf[:n])
			}
			if n <= 0 || err != nil {
				return true // done: empty (EAGAIN), EOF or an error
			}
		}
	})
}
