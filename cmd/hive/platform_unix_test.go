//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path, mode 0600: a gate a job waits at
// until the test writes to it.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
}

// runAs makes c run as user and group uid (the test runs as root).
func runAs(t *testing.T, c *exec.Cmd, uid uint32) {
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
}
