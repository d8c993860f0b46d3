//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/paths"
)

// groupAttr puts an agent run in a process group of its own (on Linux
// also told SIGTERM if the loop dies).
func groupAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(a)
	return a
}

// lockLoop takes the loop lock of a state dir, held until the returned
// func runs or the process dies.
func lockLoop(path string) (func(), error) {
	f, err := paths.OpenFile(path, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("loop lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another hive loop drives this agent (it holds %s): one loop per state dir", path)
		}
		return nil, fmt.Errorf("loop lock %q: %w", path, err)
	}
	return func() { f.Close() }, nil
}

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
