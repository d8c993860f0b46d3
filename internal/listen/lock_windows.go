package listen

import (
	"errors"
	"fmt"
	"os"

	"github.com/hivetools/hive/internal/paths"
)

// Lock opens the file at path (made if missing) for as long as the caller
// keeps it; Windows has no advisory lock here, so a stale file from a
// crashed server is taken over once its socket no longer answers (the
// caller checks). A symlink or a file not of ours is refused
// (paths.ErrInsecure).
func Lock(path string) (release func(), err error) {
	f, err := paths.OpenFile(path, os.O_CREATE|os.O_RDWR)
	if errors.Is(err, paths.ErrInsecure) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open lock %q: %w", path, err)
	}
	return func() { f.Close() }, nil
}
