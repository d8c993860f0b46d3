//go:build unix

package bench

import (
	"fmt"
	"syscall"
)

// freeBytes is the space left to an unprivileged user in the file system
// that holds dir.
func freeBytes(dir string) (int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}

// syncDisks writes what the kernel holds of every file system to disk.
func syncDisks() { syscall.Sync() }
