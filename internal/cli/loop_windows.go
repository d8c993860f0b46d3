package cli

import (
	"os"
	"syscall"
)

// groupAttr: on Windows an agent run is a plain child process.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup ends the run's process (Windows has no signals to send).
func signalGroup(p *os.Process, kill bool) { p.Kill() }

// emptyGroup: Windows runs have no process group to empty.
func emptyGroup(p *os.Process) {}

func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }

// lockLoop: Windows has no flock; one loop per state dir is not checked.
func lockLoop(path string) (func(), error) { return func() {}, nil }
