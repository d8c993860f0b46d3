package listen

import (
	"errors"
	"fmt"
	"os"

	"github.com/hivetools/hive/internal/paths"
)

// Lock takes the lock file at path (made if missing, mode 0600) for as
// long as the caller keeps it; release lets it go. The daemon and the
// holder each take one beside their socket, so a second server never
// replaces a live one's socket. A path that is a symlink or not a regular
// file of ours is refused (paths.ErrInsecure), never followed.
//
// On unix the lock is an exclusive flock and the file holds the caller's
// pid; a lock another process holds is ErrLocked (errors.Is), naming the
// path. Windows has no advisory lock here: the file is only held open,
// and a stale one from a crashed server is taken over once its socket no
// longer answers (the caller checks).
func Lock(path string) (release func(), err error) {
	f, err := paths.OpenFile(path, os.O_CREATE|os.O_RDWR)
	if errors.Is(err, paths.ErrInsecure) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open lock %q: %w", path, err)
	}
	if err := hold(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
