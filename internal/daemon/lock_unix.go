//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/paths"
)

// lockFile takes an exclusive lock on path for the daemon's lifetime. A
// path that is a symlink or not a regular file of ours is refused
// (paths.ErrInsecure), never followed.
func lockFile(path string) (func(), error) {
	f, err := paths.OpenFile(path, os.O_CREATE|os.O_RDWR)
	if errors.Is(err, paths.ErrInsecure) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open lock %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %q: %w", path, errLockHeld)
		}
		return nil, fmt.Errorf("lock %q: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}
