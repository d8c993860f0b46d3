//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package pty

import (
	"os"

	"golang.org/x/sys/unix"
)

// lineMode tells whether the terminal of master is in the line mode it
// starts in (canonical input, echo on); ok is false when it cannot tell.
func lineMode(master *os.File) (cooked, ok bool) {
	return lineModeIoctl(master, unix.TIOCGETA)
}
