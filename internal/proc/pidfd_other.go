//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// PidfdExit is Linux's: there are no pidfds here.
func PidfdExit(pidfd int) (ws syscall.WaitStatus, reaped bool, err error) {
	return ws, false, errors.ErrUnsupported
}

// PidfdExited is Linux's: there are no pidfds here.
func PidfdExited(pidfd int) bool { return false }
