//go:build unix

package job

import (
	"os"

	"github.com/hivetools/hive/internal/output"
	"syscall"
	"time"
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

// terminateOrphanGroup stops the group of a job recorded by a daemon that
// died. The leader pid must still be the process recorded (same start
// time), or gone with its group members started after it; a reused pid is
// never signalled. It returns how many processes were found.
func terminateOrphanGroup(pid int, start uint64, grace time.Duration) int {
	if start == 0 {
		return 0
	}
	if st := procStartTime(pid); st != 0 && st != start {
		return 0 // pid reused by an unrelated process
	}
	members := groupMembersSince(pid, start)
	if len(members) == 0 {
		return 0
	}
	for _, p := range members {
		syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for len(groupMembersSince(pid, start)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range groupMembersSince(pid, start) {
		syscall.Kill(p, syscall.SIGKILL)
	}
	return len(members)
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
