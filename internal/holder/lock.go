//go:build unix

package holder

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/hivetools/hive/internal/paths"
)

// ErrRunning is a holder that finds another one holding the state dir.
var ErrRunning = errors.New("another holder runs for this state directory")

// lock takes the holder's lock file for its lifetime: one holder per
// state directory, so a second one never replaces a live one's socket.
func lock(path string) (func(), error) {
	f, err := paths.OpenFile(path, os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("open holder lock %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %q: %w", path, ErrRunning)
		}
		return nil, fmt.Errorf("lock %q: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { f.Close() }, nil
}
