//go:build unix

package dashboard_test

import (
	"errors"
	"syscall"
)

// processGone reports whether no process of the group pgid is left.
func processGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
