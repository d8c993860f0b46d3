//go:build !unix

package main

import (
	"os/exec"
	"runtime"
	"testing"
)

// mkfifo skips the test: there are no named pipes in the file system here.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skipf("no named pipe (mkfifo) %s on %s", path, runtime.GOOS)
}

// runAs skips the test: a child cannot be given another uid here.
func runAs(t *testing.T, c *exec.Cmd, uid uint32) {
	t.Helper()
	t.Skipf("no uid %d to run %s as on %s", uid, c.Path, runtime.GOOS)
}
