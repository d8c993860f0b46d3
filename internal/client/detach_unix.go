//go:build unix

package client

import "syscall"

// detached starts the daemon in its own session, away from the bridge's
// terminal and process group.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
