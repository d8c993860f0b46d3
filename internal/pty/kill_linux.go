package pty

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/proc"
)

// killWait bounds how long killSession waits for killed processes to die.
const killWait = 2 * time.Second

// killSession sends SIGKILL to every live process of session sid, including
// processes it started meanwhile, and waits (event-driven, through pidfds)
// until they are dead. Zombies count as dead.
//
// leaderReaped says the session leader (pid sid) was reaped: the kernel
// then keeps the number sid from new processes while members remain, so a
// live process with pid sid means the number was reused for someone
// else's session, which is left alone.
func killSession(sid int, leaderReaped bool) {
	if leaderReaped {
		if _, ok := procSession(sid); ok {
			return
		}
	} else {
		syscall.Kill(-sid, syscall.SIGKILL) // the leader's group, even if /proc is unreadable
	}
	killed := map[int]bool{}
	var pidfds []int
	defer func() {
		for _, fd := range pidfds {
			unix.Close(fd)
		}
	}()
	// A process may fork between the scan and the kill: scan again until a
	// scan finds nobody new.
	for round := 0; round < 100; round++ {
		fresh := false
		for _, pid := range sessionProcs(sid) {
			if killed[pid] {
				continue
			}
			killed[pid], fresh = true, true
			fd, err := unix.PidfdOpen(pid, 0)
			switch {
			case err == nil:
				// The pidfd pins the process: check it is still ours, then
				// signal through it, safe from pid reuse.
				if s, ok := procSession(pid); !ok || s != sid {
					unix.Close(fd)
					continue
				}
				unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				pidfds = append(pidfds, fd)
			case errors.Is(err, unix.ESRCH):
			default: // no pidfd support
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if !fresh {
			break
		}
	}
	waitPidfds(pidfds, time.Now().Add(killWait))
}

// waitPidfds waits until every pidfd reports its process dead, or deadline.
func waitPidfds(fds []int, deadline time.Time) {
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for len(pfds) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		n, err := unix.Poll(pfds, int(left/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n <= 0 {
			continue
		}
		live := pfds[:0]
		for _, p := range pfds {
			if p.Revents == 0 {
				live = append(live, p)
			}
		}
		pfds = live
	}
}

// sessionProcs lists the live (not zombie) processes of session sid.
func sessionProcs(sid int) []int {
	var pids []int
	for _, st := range proc.Live(func(s proc.Stat) bool { return s.Session == sid }) {
		pids = append(pids, st.Pid)
	}
	return pids
}

// procSession reads the session id of a live process; ok is false for a
// process that is gone or a zombie.
func procSession(pid int) (sid int, ok bool) {
	st, ok := proc.Read(pid)
	if !ok || !st.Alive() {
		return 0, false
	}
	return st.Session, true
}
