package pty

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

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
	var pinned []proc.Pinned
	// A process may fork between the scan and the kill: scan again until a
	// scan finds nobody new.
	for round := 0; round < 100; round++ {
		fresh := false
		for _, pid := range sessionProcs(sid) {
			if killed[pid] {
				continue
			}
			killed[pid], fresh = true, true
			// Pinned, the process is checked to be still ours, then
			// signalled through its pidfd, safe from pid reuse.
			if p, ok := proc.Pin(pid, func(s proc.Stat) bool { return s.Session == sid }); ok {
				p.Signal(syscall.SIGKILL)
				pinned = append(pinned, p)
			}
		}
		if !fresh {
			break
		}
	}
	proc.WaitExit(pinned, time.Now().Add(killWait))
	for _, p := range pinned {
		p.Close()
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

// hangupIgnored reports whether process pid ignores SIGHUP (its SigIgn in
// /proc/PID/status): a hangup will not end it. It is false for a process
// that is gone or unreadable. (A blocked SIGHUP does not count: bash
// blocks signals for moments while it runs a command.)
func hangupIgnored(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	const hup = 1 << (syscall.SIGHUP - 1)
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "SigIgn" {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&hup != 0 {
			return true
		}
	}
	return false
}
