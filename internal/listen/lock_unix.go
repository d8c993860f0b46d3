//go:build unix

package listen

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/paths"
)

// Lock takes an exclusive lock on the file at path (made if missing, mode
// 0600) for as long as the caller keeps it, and writes the caller's pid
// in it; release lets it go. A path that is a symlink or not a regular
// file of ours is refused (paths.ErrInsecure), never followed. A lock
// another process holds is ErrLocked (errors.Is), naming the path: the
// daemon and the holder each take one beside their socket, so a second
// server never replaces a live one's socket.
func Lock(path string) (release func(), err error) {
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
			return nil, fmt.Errorf("lock %q: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %q: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}
