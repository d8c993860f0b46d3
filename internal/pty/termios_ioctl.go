//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package pty

import (
	"os"

	"golang.org/x/sys/unix"
)

// lineModeIoctl is lineMode with req, the platform's request for a
// terminal's settings (a pty's master answers with its terminal's).
func lineModeIoctl(master *os.File, req uint) (cooked, ok bool) {
	rc, err := master.SyscallConn()
	if err != nil {
		return false, false
	}
	var t *unix.Termios
	rc.Control(func(fd uintptr) { t, err = unix.IoctlGetTermios(int(fd), req) })
	if err != nil {
		return false, false
	}
	return t.Lflag&unix.ICANON != 0 && t.Lflag&unix.ECHO != 0, true
}
