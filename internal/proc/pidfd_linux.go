package proc

import (
	"errors"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PidfdExit reads the exit status of the process pidfd refers to, which
// need not be a child of this one: the kernel keeps it once the process's
// parent, whoever that is, has reaped it (PIDFD_GET_INFO with
// PIDFD_INFO_EXIT, Linux 6.15). reaped is false while the process runs
// or is a zombie. At the exit an epoll of the pidfd reports it readable,
// and again at the reap (EPOLLIN|EPOLLHUP, edge-triggered: Go's poller
// sees both), so a caller waits for readiness, not by polling. err wraps
// errors.ErrUnsupported where the kernel cannot tell: no PIDFD_GET_INFO
// (before 6.13), or a reaped process without its exit (6.13, 6.14).
func PidfdExit(pidfd int) (ws syscall.WaitStatus, reaped bool, err error) {
	var info unix.PidfdInfo
	info.Mask = unix.PIDFD_INFO_EXIT
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(pidfd), uintptr(unix.PIDFD_GET_INFO), uintptr(unsafe.Pointer(&info)))
	switch {
	case e == unix.ENOTTY || e == unix.EINVAL:
		return 0, false, errors.Join(errors.ErrUnsupported, e)
	case e == unix.ESRCH:
		// Gone, and the kernel kept no exit: one too old to.
		return 0, true, errors.Join(errors.ErrUnsupported, e)
	case e != 0:
		return 0, false, e
	case info.Mask&unix.PIDFD_INFO_EXIT == 0:
		return 0, false, nil
	}
	return syscall.WaitStatus(info.Exit_code), true, nil
}

// PidfdExited reports whether the process pidfd refers to has exited (a
// zombie, or reaped): its pidfd polls readable.
func PidfdExited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
}
