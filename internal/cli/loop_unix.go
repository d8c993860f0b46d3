//go:build unix

package cli

import (
	"os"
	"syscall"
	"time"
)

// groupAttr puts an agent run in a process group of its own.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM (kill: SIGKILL) to the process group p leads.
func signalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-p.Pid, sig)
}

// emptyGroup ends what is left in the process group of p, which has been
// waited for: SIGTERM, then SIGKILL after leftoverGrace.
func emptyGroup(p *os.Process) {
	if syscall.Kill(-p.Pid, 0) != nil {
		return // nobody left
	}
	syscall.Kill(-p.Pid, syscall.SIGTERM)
	deadline := time.Now().Add(leftoverGrace)
	for syscall.Kill(-p.Pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(-p.Pid, syscall.SIGKILL)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitCode is a run's exit status as a shell tells it: 128+signal when a
// signal ended it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
