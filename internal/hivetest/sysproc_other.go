//go:build !unix

package hivetest

import (
	"os/exec"
	"runtime"
	"testing"
)

// Setsid skips the test: there are no sessions on this platform.
func Setsid(tb testing.TB, c *exec.Cmd) {
	tb.Helper()
	tb.Skipf("no sessions (setsid) on %s", runtime.GOOS)
}

// Setpgid skips the test: there are no process groups on this platform.
func Setpgid(tb testing.TB, c *exec.Cmd) {
	tb.Helper()
	tb.Skipf("no process groups (setpgid) on %s", runtime.GOOS)
}
