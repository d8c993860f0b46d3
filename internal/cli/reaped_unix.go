//go:build unix

package cli

import "syscall"

// reaped says whether no process has pid any more (not even a zombie: its
// parent has taken its status).
func reaped(pid int) bool { return syscall.Kill(pid, 0) == syscall.ESRCH }
