//go:build unix

package listen

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// hold locks f exclusively and writes this process's pid in it.
func hold(f *os.File, path string) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("lock %q: %w", path, ErrLocked)
		}
		return fmt.Errorf("lock %q: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return nil
}
