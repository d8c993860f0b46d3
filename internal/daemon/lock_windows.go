package daemon

import (
	"errors"
	"fmt"
	"os"

	"github.com/hivetools/hive/internal/paths"
)

// lockFile creates path exclusively; a stale file from a crashed daemon
// is replaced when its socket no longer answers (checked by the caller).
func lockFile(path string) (func(), error) {
	f, err := paths.OpenFile(path, os.O_CREATE|os.O_RDWR)
	if errors.Is(err, paths.ErrInsecure) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("open lock %q: %w", path, err)
	}
	return func() { f.Close() }, nil
}
