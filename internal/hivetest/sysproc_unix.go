//go:build unix

package hivetest

import (
	"os/exec"
	"syscall"
	"testing"
)

// Setsid makes c start in a session of its own (setsid), out of the
// test's process group and session, as a daemon or an escaped job does.
// Where there are no sessions (not unix) it skips the test. It replaces
// what c.SysProcAttr held.
func Setsid(tb testing.TB, c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// Setpgid makes c start in a process group of its own (setpgid), as the
// leader of a job does. Where there are no process groups (not unix) it
// skips the test. It replaces what c.SysProcAttr held.
func Setpgid(tb testing.TB, c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
