//go:build !unix

package bench

import (
	"errors"
	"fmt"
	"runtime"
)

// freeBytes cannot tell the free space here: there is no statfs.
func freeBytes(dir string) (int64, error) {
	return 0, fmt.Errorf("free space of %s on %s: %w", dir, runtime.GOOS, errors.ErrUnsupported)
}

// syncDisks does nothing: there is no call that syncs every file system.
func syncDisks() {}
