//go:build unix

package httpfront

import (
	"fmt"
	"os"
	"syscall"
)

const (
	openNoFollow = syscall.O_NOFOLLOW
	openNonBlock = syscall.O_NONBLOCK // a FIFO swapped in after the type check must not block the open
)

// checkTokenPerm refuses a token file that group or others may read or
// write.
func checkTokenPerm(fi os.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mode %04o lets group or others read or write it", perm)
	}
	return nil
}
