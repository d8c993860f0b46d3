//go:build unix && !linux

package pty

import "syscall"

// killSession sends SIGKILL to the process group of session leader sid.
// Without /proc, processes of the session in other groups (background jobs
// of an interactive shell) are out of reach. Once the leader is reaped, a
// live process with its pid means the number was reused: nothing is sent.
func killSession(sid int, leaderReaped bool) {
	if leaderReaped && syscall.Kill(sid, 0) == nil {
		return
	}
	syscall.Kill(-sid, syscall.SIGKILL)
}

// hangupIgnored reports whether process pid ignores SIGHUP; without /proc
// nobody knows, and Close waits out its grace.
func hangupIgnored(pid int) bool { return false }
