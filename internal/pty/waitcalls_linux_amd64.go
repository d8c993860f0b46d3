package pty

import "golang.org/x/sys/unix"

// The older waits amd64 still has (glibc's select and poll use them).
func init() {
	waitCalls[unix.SYS_SELECT] = callSelect
	waitCalls[unix.SYS_POLL] = callPoll
	waitCalls[unix.SYS_EPOLL_WAIT] = callEpoll
}
